//! Opening the GPU vendor's libraries at run time: the graphics probe links against no GPU
//! SDK, so one binary runs on any node and reports what that node's libraries can do.

use libloading::os::unix::Library;

use super::graphics_evidence::error_line;

/// Opens a library by file name, as the dynamic linker finds it (the NVIDIA container
/// toolkit puts the driver's libraries on its path). The library is never unmapped
/// (`RTLD_NODELETE`): a driver's libraries register thread-exit and `atexit` handlers, and
/// unloading one mid-process is where they crash; the probe exits right after anyway.
pub fn open(name: &str) -> Result<Library, String> {
    // SAFETY: loading runs the library's initialisers. These are the GPU vendor's own
    // libraries, which every GPU program on the node loads the same way.
    unsafe {
        Library::open(
            Some(name),
            libc::RTLD_NOW | libc::RTLD_LOCAL | libc::RTLD_NODELETE,
        )
    }
    .map_err(|e| {
        // The dynamic linker's message usually names the library already.
        let text = e.to_string();
        error_line(&if error_line(&text).starts_with(name) {
            text
        } else {
            format!("{name}: {text}")
        })
    })
}

/// A function of `library` by name, copied out as a plain function pointer.
///
/// # Safety
///
/// `T` must be the function's true C signature, and the pointer must not be called after
/// `library` is dropped (the library is `RTLD_NODELETE`, so its code in fact stays mapped).
pub unsafe fn symbol<T: Copy>(
    library: &Library,
    library_name: &str,
    name: &str,
) -> Result<T, String> {
    let mut c_name = name.as_bytes().to_vec();
    c_name.push(0);
    // SAFETY: the caller vouches for `T`.
    unsafe { library.get::<T>(&c_name) }
        .map(|s| *s)
        .map_err(|_| format!("{library_name}: no symbol {name}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_and_symbol_are_errors_naming_only_files() {
        let e = open("libfleetbot-does-not-exist.so.1").unwrap_err();
        assert!(e.starts_with("libfleetbot-does-not-exist.so.1: "), "{e}");
        assert_eq!(
            e.matches("libfleetbot-does-not-exist.so.1").count(),
            1,
            "{e}"
        );
        let libc = open("libc.so.6").unwrap();
        // SAFETY: `getpid` is `pid_t getpid(void)`.
        let getpid: unsafe extern "C" fn() -> libc::pid_t =
            unsafe { symbol(&libc, "libc.so.6", "getpid") }.unwrap();
        assert_eq!(unsafe { getpid() } as u32, std::process::id());
        let missing = unsafe { symbol::<unsafe extern "C" fn()>(&libc, "libc.so.6", "cuInit") };
        assert_eq!(missing.unwrap_err(), "libc.so.6: no symbol cuInit");
    }
}
