//! A write-fault seam for tests: `cargo test` builds can make every write
//! under a directory fail with EIO, which no filesystem here produces on
//! demand (a small tmpfs gives ENOSPC and permissions give EACCES, both
//! tested for real; a failing disk needs device-mapper, which a container
//! lacks). Every other build compiles [`check_write`] to `Ok(())`.

use std::io;
use std::path::Path;

#[cfg(test)]
static FAILING: parking_lot::Mutex<Vec<std::path::PathBuf>> = parking_lot::const_mutex(Vec::new());

/// Called by the atomic writers after writing a temp file, before renaming
/// it: fails with EIO when `path` is under a directory a test marked.
#[inline]
pub fn check_write(path: &Path) -> io::Result<()> {
  #[cfg(test)]
  if FAILING.lock().iter().any(|dir| path.starts_with(dir)) {
    return Err(io::Error::from_raw_os_error(5)); // EIO
  }
  let _ = path;
  Ok(())
}

/// While alive, writes under the directory fail with EIO.
#[cfg(test)]
pub struct FailWrites(std::path::PathBuf);

#[cfg(test)]
impl FailWrites {
  pub fn under(dir: &Path) -> FailWrites {
    FAILING.lock().push(dir.to_path_buf());
    FailWrites(dir.to_path_buf())
  }
}

#[cfg(test)]
impl Drop for FailWrites {
  fn drop(&mut self) {
    FAILING.lock().retain(|dir| *dir != self.0);
  }
}
