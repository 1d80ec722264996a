//! An explicit-state explorer: every state reachable from the start, breadth first, each seen
//! once (by hash), with the invariant checked in every one. Breadth first, so the first
//! violation found comes with a shortest trace, which is the most readable one.
//!
//! Written here instead of taking `stateright`: the journal's model needs nothing but
//! exhaustive search with traces, which is this file; a dependency would bring its own
//! actor and network vocabulary the model does not use, and a build for CI to make.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::hash::Hash;

/// A system to explore.
pub(crate) trait System {
    /// One state of the whole system.
    type State: Clone + Eq + Hash;

    /// The start.
    fn init(&self) -> Self::State;

    /// Every step enabled in `state`: its label and the state it leads to.
    fn next(&self, state: &Self::State, out: &mut Vec<(String, Self::State)>);

    /// What is false in `state`, if anything. `terminal`: no step is enabled.
    fn violation(&self, state: &Self::State, terminal: bool) -> Option<String>;
}

/// What an exploration found.
pub(crate) struct Explored {
    /// Distinct states reached.
    pub states: usize,
    /// Steps taken (edges, including those to states seen before).
    pub steps: usize,
    /// The deepest state, in steps from the start.
    pub depth: usize,
    /// The first violation: what is false, and the steps that lead there.
    pub violation: Option<(String, Vec<String>)>,
    /// True when the limit on states stopped the search before it was complete.
    pub cut: bool,
}

/// Explore `system` up to `limit` distinct states.
pub(crate) fn explore<S: System>(system: &S, limit: usize) -> Explored {
    let start = system.init();
    // Each state: its parent's index and the label of the step from there.
    let mut seen: HashMap<S::State, usize> = HashMap::new();
    let mut states: Vec<S::State> = vec![start.clone()];
    let mut parent: Vec<(usize, String, usize)> = vec![(usize::MAX, String::new(), 0)];
    seen.insert(start, 0);
    let mut out = Vec::new();
    let mut explored = Explored {
        states: 1,
        steps: 0,
        depth: 0,
        violation: None,
        cut: false,
    };
    let mut at = 0;
    while at < states.len() {
        let state = states[at].clone();
        out.clear();
        system.next(&state, &mut out);
        if let Some(what) = system.violation(&state, out.is_empty()) {
            explored.states = states.len();
            explored.violation = Some((what, trace(&parent, at)));
            return explored;
        }
        let depth = parent[at].2 + 1;
        for (label, next) in out.drain(..) {
            explored.steps += 1;
            if let Entry::Vacant(v) = seen.entry(next.clone()) {
                if states.len() >= limit {
                    explored.cut = true;
                    continue;
                }
                v.insert(states.len());
                states.push(next);
                parent.push((at, label, depth));
                explored.depth = explored.depth.max(depth);
            }
        }
        at += 1;
    }
    explored.states = states.len();
    explored
}

fn trace(parent: &[(usize, String, usize)], mut at: usize) -> Vec<String> {
    let mut steps = Vec::new();
    while at != 0 {
        let (from, label, _) = &parent[at];
        steps.push(label.clone());
        at = *from;
    }
    steps.reverse();
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A counter that may add 1 or 2, up to 10; "false" at 7.
    struct Count;
    impl System for Count {
        type State = u8;
        fn init(&self) -> u8 {
            0
        }
        fn next(&self, s: &u8, out: &mut Vec<(String, u8)>) {
            for d in [1, 2] {
                if s + d <= 10 {
                    out.push((format!("+{d}"), s + d));
                }
            }
        }
        fn violation(&self, s: &u8, _: bool) -> Option<String> {
            (*s == 7).then(|| "seven".to_owned())
        }
    }

    #[test]
    fn the_first_violation_comes_with_a_shortest_trace() {
        let found = explore(&Count, 100);
        let (what, trace) = found.violation.expect("found");
        assert_eq!(what, "seven");
        assert_eq!(trace.len(), 4, "{trace:?}");
    }
}
