//! CUDA's vectorAdd through the driver API, with `libcuda.so.1` opened at run time: on every
//! device a context, an embedded PTX kernel the driver compiles for whatever GPU it is, two
//! vectors copied in, one launch, the sum copied back and every element compared, then
//! everything freed. Each failing call is one error line; nothing here panics.

use std::ffi::{CStr, CString, c_char, c_int, c_uint, c_void};
use std::ptr::{null, null_mut};

use libloading::os::unix::Library;

use super::dynlib::{open, symbol};
use super::graphics_evidence::{VectorAdd, error_line};

pub const LIBRARY: &str = "libcuda.so.1";

/// vectorAdd, `c[i] = a[i] + b[i]` for `i < n`, written as PTX so no CUDA toolkit is needed to
/// build fleetbot. PTX ISA 6.0 (CUDA 9) for `sm_50`: the driver JIT-compiles it for any later
/// GPU. The same text assembles with ptxas for sm_50 through sm_120.
const VECTOR_ADD_PTX: &str = "\
.version 6.0
.target sm_50
.address_size 64

.visible .entry vectorAdd(
\t.param .u64 vectorAdd_a,
\t.param .u64 vectorAdd_b,
\t.param .u64 vectorAdd_c,
\t.param .u32 vectorAdd_n
)
{
\t.reg .pred %p<2>;
\t.reg .b32 %r<6>;
\t.reg .f32 %f<4>;
\t.reg .b64 %rd<11>;

\tld.param.u64 %rd1, [vectorAdd_a];
\tld.param.u64 %rd2, [vectorAdd_b];
\tld.param.u64 %rd3, [vectorAdd_c];
\tld.param.u32 %r2, [vectorAdd_n];
\tmov.u32 %r3, %ctaid.x;
\tmov.u32 %r4, %ntid.x;
\tmov.u32 %r5, %tid.x;
\tmad.lo.s32 %r1, %r3, %r4, %r5;
\tsetp.ge.u32 %p1, %r1, %r2;
\t@%p1 bra DONE;
\tcvta.to.global.u64 %rd4, %rd1;
\tcvta.to.global.u64 %rd5, %rd2;
\tcvta.to.global.u64 %rd6, %rd3;
\tmul.wide.u32 %rd7, %r1, 4;
\tadd.s64 %rd8, %rd4, %rd7;
\tadd.s64 %rd9, %rd5, %rd7;
\tadd.s64 %rd10, %rd6, %rd7;
\tld.global.f32 %f1, [%rd8];
\tld.global.f32 %f2, [%rd9];
\tadd.f32 %f3, %f1, %f2;
\tst.global.f32 [%rd10], %f3;
DONE:
\tret;
}
";

/// As in CUDA's own vectorAdd sample; every sum is an integer below 2^24, so exact in f32.
const ELEMENTS: usize = 50_000;
const THREADS_PER_BLOCK: u32 = 256;
/// `CU_JIT_ERROR_LOG_BUFFER` and `CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES` (cuda.h `CUjit_option`).
const JIT_ERROR_LOG_BUFFER: c_int = 5;
const JIT_ERROR_LOG_BUFFER_SIZE_BYTES: c_int = 6;
const JIT_LOG_BYTES: usize = 2048;

type CuResult = c_int;
type CuDevice = c_int;
type CuContext = *mut c_void;
type CuModule = *mut c_void;
type CuFunction = *mut c_void;
type CuDevicePtr = u64;

/// The driver API functions the probe calls, by their exported (versioned) names.
struct Driver {
    _library: Library,
    init: unsafe extern "C" fn(c_uint) -> CuResult,
    driver_get_version: unsafe extern "C" fn(*mut c_int) -> CuResult,
    device_get_count: unsafe extern "C" fn(*mut c_int) -> CuResult,
    device_get: unsafe extern "C" fn(*mut CuDevice, c_int) -> CuResult,
    ctx_create: unsafe extern "C" fn(*mut CuContext, c_uint, CuDevice) -> CuResult,
    ctx_destroy: unsafe extern "C" fn(CuContext) -> CuResult,
    ctx_synchronize: unsafe extern "C" fn() -> CuResult,
    module_load_data_ex: unsafe extern "C" fn(
        *mut CuModule,
        *const c_void,
        c_uint,
        *mut c_int,
        *mut *mut c_void,
    ) -> CuResult,
    module_get_function: unsafe extern "C" fn(*mut CuFunction, CuModule, *const c_char) -> CuResult,
    module_unload: unsafe extern "C" fn(CuModule) -> CuResult,
    mem_alloc: unsafe extern "C" fn(*mut CuDevicePtr, usize) -> CuResult,
    mem_free: unsafe extern "C" fn(CuDevicePtr) -> CuResult,
    memcpy_htod: unsafe extern "C" fn(CuDevicePtr, *const c_void, usize) -> CuResult,
    memcpy_dtoh: unsafe extern "C" fn(*mut c_void, CuDevicePtr, usize) -> CuResult,
    #[allow(clippy::type_complexity)]
    launch_kernel: unsafe extern "C" fn(
        CuFunction,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        *mut c_void,
        *mut *mut c_void,
        *mut *mut c_void,
    ) -> CuResult,
    /// Optional: without it an error is its number alone.
    get_error_name: Option<unsafe extern "C" fn(CuResult, *mut *const c_char) -> CuResult>,
}

/// What the CUDA half of the probe found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaOutcome {
    pub vectoradd: VectorAdd,
    pub devices: u32,
    pub passed_devices: u32,
    /// `cuDriverGetVersion` as `major.minor`, when the call worked.
    pub api_version: Option<String>,
    pub errors: Vec<String>,
}

impl Driver {
    fn load(name: &str) -> Result<Driver, String> {
        let library = open(name)?;
        // SAFETY: each type below is the function's signature in cuda.h, for the exported
        // name given (the `_v2` entry points are the 64-bit-pointer ABI every current driver
        // keeps); the library stays loaded for the process's life.
        unsafe {
            Ok(Driver {
                init: symbol(&library, LIBRARY, "cuInit")?,
                driver_get_version: symbol(&library, LIBRARY, "cuDriverGetVersion")?,
                device_get_count: symbol(&library, LIBRARY, "cuDeviceGetCount")?,
                device_get: symbol(&library, LIBRARY, "cuDeviceGet")?,
                ctx_create: symbol(&library, LIBRARY, "cuCtxCreate_v2")?,
                ctx_destroy: symbol(&library, LIBRARY, "cuCtxDestroy_v2")?,
                ctx_synchronize: symbol(&library, LIBRARY, "cuCtxSynchronize")?,
                module_load_data_ex: symbol(&library, LIBRARY, "cuModuleLoadDataEx")?,
                module_get_function: symbol(&library, LIBRARY, "cuModuleGetFunction")?,
                module_unload: symbol(&library, LIBRARY, "cuModuleUnload")?,
                mem_alloc: symbol(&library, LIBRARY, "cuMemAlloc_v2")?,
                mem_free: symbol(&library, LIBRARY, "cuMemFree_v2")?,
                memcpy_htod: symbol(&library, LIBRARY, "cuMemcpyHtoD_v2")?,
                memcpy_dtoh: symbol(&library, LIBRARY, "cuMemcpyDtoH_v2")?,
                launch_kernel: symbol(&library, LIBRARY, "cuLaunchKernel")?,
                get_error_name: symbol(&library, LIBRARY, "cuGetErrorName").ok(),
                _library: library,
            })
        }
    }

    /// `Ok` for `CUDA_SUCCESS`, else `call: CUDA_ERROR_… (n)`.
    fn check(&self, call: &str, result: CuResult) -> Result<(), String> {
        if result == 0 {
            return Ok(());
        }
        let mut name: *const c_char = null();
        let known = self.get_error_name.is_some_and(|get| {
            // SAFETY: cuGetErrorName writes a pointer to a static string, or fails.
            unsafe { get(result, &mut name) == 0 && !name.is_null() }
        });
        Err(if known {
            // SAFETY: a NUL-terminated static string from the driver.
            let text = unsafe { CStr::from_ptr(name) }.to_string_lossy();
            format!("{call}: {text} ({result})")
        } else {
            format!("{call}: error {result}")
        })
    }

    /// vectorAdd on one device, in a context of its own that is destroyed whatever happened
    /// (which also frees anything the run left behind).
    fn run_on(&self, ordinal: c_int) -> Result<(), String> {
        let mut device: CuDevice = 0;
        // SAFETY: driver API calls with valid out-pointers; the context is destroyed below.
        unsafe {
            self.check("cuDeviceGet", (self.device_get)(&mut device, ordinal))?;
            let mut context: CuContext = null_mut();
            self.check("cuCtxCreate", (self.ctx_create)(&mut context, 0, device))?;
            let result = self.vector_add();
            let destroyed = self.check("cuCtxDestroy", (self.ctx_destroy)(context));
            result.and(destroyed)
        }
    }

    /// The kernel in the current context: load, allocate, copy, launch, copy back, compare,
    /// free. The first failure is returned; cleanup still runs and its failure counts too.
    ///
    /// # Safety
    ///
    /// A context must be current on this thread.
    unsafe fn vector_add(&self) -> Result<(), String> {
        let ptx = CString::new(VECTOR_ADD_PTX).map_err(|e| e.to_string())?;
        let mut log = vec![0u8; JIT_LOG_BYTES];
        let mut options = [JIT_ERROR_LOG_BUFFER, JIT_ERROR_LOG_BUFFER_SIZE_BYTES];
        let mut values = [
            log.as_mut_ptr().cast::<c_void>(),
            JIT_LOG_BYTES as *mut c_void,
        ];
        let mut module: CuModule = null_mut();
        // SAFETY: a NUL-terminated PTX image; the options are a log buffer and its size,
        // which outlive the call.
        let loaded = unsafe {
            (self.module_load_data_ex)(
                &mut module,
                ptx.as_ptr().cast(),
                options.len() as c_uint,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        };
        if let Err(e) = self.check("cuModuleLoadData", loaded) {
            let jit = CStr::from_bytes_until_nul(&log)
                .map(|c| c.to_string_lossy().into_owned())
                .unwrap_or_default();
            return Err(if jit.trim().is_empty() {
                e
            } else {
                format!("{e}: {}", jit.trim())
            });
        }
        let mut buffers: Vec<CuDevicePtr> = Vec::new();
        // SAFETY: the module was loaded above; buffers are freed below.
        let result = unsafe { self.launch(module, &mut buffers) };
        let mut cleanup = Ok(());
        for b in buffers {
            // SAFETY: each was allocated by cuMemAlloc in this context and is freed once.
            cleanup = cleanup.and(self.check("cuMemFree", unsafe { (self.mem_free)(b) }));
        }
        // SAFETY: the module is unloaded once, after its last use.
        cleanup =
            cleanup.and(self.check("cuModuleUnload", unsafe { (self.module_unload)(module) }));
        result.and(cleanup)
    }

    /// # Safety
    ///
    /// `module` is loaded in the current context; every buffer allocated is pushed onto
    /// `buffers` for the caller to free.
    unsafe fn launch(
        &self,
        module: CuModule,
        buffers: &mut Vec<CuDevicePtr>,
    ) -> Result<(), String> {
        let a: Vec<f32> = (0..ELEMENTS).map(|i| i as f32).collect();
        let b: Vec<f32> = (0..ELEMENTS).map(|i| (3 * i + 1) as f32).collect();
        let bytes = ELEMENTS * size_of::<f32>();
        let mut function: CuFunction = null_mut();
        // SAFETY: valid out-pointers and host buffers of `bytes` bytes each; device buffers
        // of the same size; the kernel's parameters are pointers to values that outlive the
        // launch, in the kernel's order (a, b, c: u64; n: u32).
        unsafe {
            self.check(
                "cuModuleGetFunction",
                (self.module_get_function)(&mut function, module, c"vectorAdd".as_ptr()),
            )?;
            let alloc = |buffers: &mut Vec<CuDevicePtr>| -> Result<CuDevicePtr, String> {
                let mut ptr: CuDevicePtr = 0;
                self.check("cuMemAlloc", (self.mem_alloc)(&mut ptr, bytes))?;
                buffers.push(ptr);
                Ok(ptr)
            };
            let mut d_a = alloc(buffers)?;
            let mut d_b = alloc(buffers)?;
            let mut d_c = alloc(buffers)?;
            self.check(
                "cuMemcpyHtoD",
                (self.memcpy_htod)(d_a, a.as_ptr().cast(), bytes),
            )?;
            self.check(
                "cuMemcpyHtoD",
                (self.memcpy_htod)(d_b, b.as_ptr().cast(), bytes),
            )?;
            let mut n = ELEMENTS as u32;
            let mut params: [*mut c_void; 4] = [
                (&mut d_a as *mut CuDevicePtr).cast(),
                (&mut d_b as *mut CuDevicePtr).cast(),
                (&mut d_c as *mut CuDevicePtr).cast(),
                (&mut n as *mut u32).cast(),
            ];
            let blocks = (ELEMENTS as u32).div_ceil(THREADS_PER_BLOCK);
            self.check(
                "cuLaunchKernel",
                (self.launch_kernel)(
                    function,
                    blocks,
                    1,
                    1,
                    THREADS_PER_BLOCK,
                    1,
                    1,
                    0,
                    null_mut(),
                    params.as_mut_ptr(),
                    null_mut(),
                ),
            )?;
            self.check("cuCtxSynchronize", (self.ctx_synchronize)())?;
            let mut c = vec![f32::NAN; ELEMENTS];
            self.check(
                "cuMemcpyDtoH",
                (self.memcpy_dtoh)(c.as_mut_ptr().cast(), d_c, bytes),
            )?;
            let wrong = (0..ELEMENTS)
                .filter(|&i| c[i].to_bits() != (a[i] + b[i]).to_bits())
                .count();
            if wrong > 0 {
                return Err(format!(
                    "vectorAdd: {wrong} of {ELEMENTS} elements came back wrong"
                ));
            }
        }
        Ok(())
    }
}

/// Runs vectorAdd on every device the driver counts.
pub fn vector_add() -> CudaOutcome {
    vector_add_with(LIBRARY)
}

/// As [`vector_add`], with the library named (the tests' stand-in driver).
fn vector_add_with(library: &str) -> CudaOutcome {
    let mut out = CudaOutcome {
        vectoradd: VectorAdd::Unavailable,
        devices: 0,
        passed_devices: 0,
        api_version: None,
        errors: Vec::new(),
    };
    let driver = match Driver::load(library) {
        Ok(d) => d,
        Err(e) => {
            out.errors.push(error_line(&e));
            return out;
        }
    };
    out.vectoradd = VectorAdd::Failed;
    // SAFETY: cuInit takes flags 0; the others write one int each.
    unsafe {
        if let Err(e) = driver.check("cuInit", (driver.init)(0)) {
            out.errors.push(error_line(&e));
            return out;
        }
        let mut version: c_int = 0;
        match driver.check(
            "cuDriverGetVersion",
            (driver.driver_get_version)(&mut version),
        ) {
            Ok(()) => out.api_version = Some(format!("{}.{}", version / 1000, version % 1000 / 10)),
            Err(e) => out.errors.push(error_line(&e)),
        }
        let mut count: c_int = 0;
        if let Err(e) = driver.check("cuDeviceGetCount", (driver.device_get_count)(&mut count)) {
            out.errors.push(error_line(&e));
            return out;
        }
        out.devices = u32::try_from(count).unwrap_or(0);
    }
    for ordinal in 0..out.devices {
        match driver.run_on(ordinal as c_int) {
            Ok(()) => out.passed_devices += 1,
            Err(e) => out
                .errors
                .push(error_line(&format!("device {ordinal}: {e}"))),
        }
    }
    if out.devices > 0 && out.passed_devices == out.devices {
        out.vectoradd = VectorAdd::Passed;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use std::process::Command;

    /// A stand-in libcuda (fixtures/probe/fake_libcuda.c) built with the system's C compiler,
    /// whose "device" is host memory and whose "kernel" adds on the CPU (or adds wrong, with
    /// `-DFAKE_WRONG`): it proves the probe's calls, parameter passing and comparison without a
    /// GPU. Without a C compiler the test fails rather than passing untested: building
    /// fleetbot needs one already (ring's C code), so a machine that runs the tests has one.
    fn fake_driver(dir: &Path, name: &str, flags: &[&str]) -> String {
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/probe/fake_libcuda.c");
        let out = dir.join(name);
        let built = Command::new("cc")
            .args(["-shared", "-fPIC", "-O1", "-o"])
            .arg(&out)
            .args(flags)
            .arg(&source)
            .status()
            .unwrap_or_else(|e| panic!("`cc` (the C compiler the build uses) cannot run: {e}"));
        assert!(built.success(), "the stand-in driver must compile");
        out.to_string_lossy().into_owned()
    }

    #[test]
    fn without_libcuda_vectoradd_is_unavailable() {
        let o = vector_add_with("libcuda-fleetbot-missing.so.1");
        assert_eq!(o.vectoradd, VectorAdd::Unavailable);
        assert_eq!((o.devices, o.passed_devices), (0, 0));
        assert_eq!(o.errors.len(), 1);
        assert!(o.errors[0].starts_with("libcuda-fleetbot-missing.so.1: "));
    }

    #[test]
    fn the_driver_api_calls_pass_the_kernel_its_vectors_and_check_every_element() {
        let dir = tempfile::tempdir().unwrap();
        let good = fake_driver(dir.path(), "libcuda-good.so", &["-DFAKE_DEVICES=3"]);
        let o = vector_add_with(&good);
        assert_eq!(o.errors, Vec::<String>::new());
        assert_eq!(
            (o.vectoradd, o.devices, o.passed_devices),
            (VectorAdd::Passed, 3, 3)
        );
        assert_eq!(o.api_version.as_deref(), Some("13.0"));

        let wrong = fake_driver(
            dir.path(),
            "libcuda-wrong.so",
            &["-DFAKE_DEVICES=2", "-DFAKE_WRONG"],
        );
        let o = vector_add_with(&wrong);
        assert_eq!(
            (o.vectoradd, o.devices, o.passed_devices),
            (VectorAdd::Failed, 2, 0)
        );
        assert_eq!(
            o.errors[0],
            "device 0: vectorAdd: 1 of 50000 elements came back wrong"
        );

        let none = fake_driver(
            dir.path(),
            "libcuda-none.so",
            &["-DFAKE_DEVICES=0", "-DFAKE_NO_DEVICE"],
        );
        let o = vector_add_with(&none);
        assert_eq!((o.vectoradd, o.devices), (VectorAdd::Failed, 0));
        assert_eq!(o.errors, vec!["cuInit: CUDA_ERROR_NO_DEVICE (100)"]);

        let bad_ptx = fake_driver(
            dir.path(),
            "libcuda-jit.so",
            &["-DFAKE_DEVICES=1", "-DFAKE_BAD_JIT"],
        );
        let o = vector_add_with(&bad_ptx);
        assert_eq!(o.vectoradd, VectorAdd::Failed);
        assert_eq!(
            o.errors,
            vec!["device 0: cuModuleLoadData: CUDA_ERROR_INVALID_PTX (218): ptxas fatal: stand-in"]
        );
    }

    #[test]
    fn the_kernel_is_the_ptx_the_stand_in_expects() {
        // The stand-in driver checks it is given this entry point with four parameters.
        assert!(VECTOR_ADD_PTX.contains(".visible .entry vectorAdd("));
        assert_eq!(VECTOR_ADD_PTX.matches(".param .u").count(), 4);
        assert!(VECTOR_ADD_PTX.starts_with(".version 6.0\n.target sm_50\n"));
    }
}
