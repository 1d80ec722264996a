//! Reading an input file of the command: a regular file or `-` for standard input, at most
//! [`MAX_INPUT_BYTES`]. `/dev/zero` does not grow without bound and a FIFO with no writer does not
//! hang the command: both are refused.

use std::io::Read;
use std::path::Path;

use crate::output::usage;

/// The largest input file read: a send body is well under a kilobyte.
pub const MAX_INPUT_BYTES: u64 = 1024 * 1024;

/// The text of `path` (or standard input for `-`), refused with exit 2 when it is not a regular
/// file, is larger than [`MAX_INPUT_BYTES`], or is not UTF-8.
pub fn read_capped(path: &Path) -> Result<String, u8> {
    let shown = path.display();
    let mut bytes = Vec::new();
    if path.as_os_str() == "-" {
        std::io::stdin()
            .lock()
            .take(MAX_INPUT_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| usage(format!("cannot read standard input: {e}")))?;
    } else {
        let meta =
            std::fs::metadata(path).map_err(|e| usage(format!("cannot read {shown}: {e}")))?;
        if !meta.is_file() {
            return Err(usage(format!(
                "{shown} is not a regular file (use `-` for standard input)"
            )));
        }
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_INPUT_BYTES + 1).read_to_end(&mut bytes))
            .map_err(|e| usage(format!("cannot read {shown}: {e}")))?;
    }
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(usage(format!(
            "{shown} is larger than {MAX_INPUT_BYTES} bytes"
        )));
    }
    String::from_utf8(bytes).map_err(|_| usage(format!("{shown} is not UTF-8 text")))
}
