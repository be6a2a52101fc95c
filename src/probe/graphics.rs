//! The graphics probe: what one GPU worker's NVIDIA stack can do, from inside a pod. CUDA runs
//! vectorAdd on every device (`cuda.rs`); GLX loads the vendor library the NVIDIA container
//! toolkit injects; EGL enumerates its devices and finds NVIDIA's; Vulkan creates an instance
//! and counts NVIDIA's physical devices. Every library is opened at run time, so the same
//! binary runs on a node without a GPU and says so, and no display is needed. A failing check
//! is a state and an error line in the evidence, never a panic: the verdict is the verifier's.

use std::ffi::{CStr, c_char, c_void};
use std::path::{Path, PathBuf};
use std::ptr::null_mut;

use ash::vk;

use super::cuda;
use super::dynlib::{open, symbol};
use super::graphics_evidence::{
    GRAPHICS_SCHEMA, GraphicsEvidence, Library, MAX_ERRORS, VulkanDevice, error_line,
};

/// The GLX vendor library of NVIDIA's driver (GLVND's `libGLX_<vendor>.so.0`).
const GLX_LIBRARY: &str = "libGLX_nvidia.so.0";
/// GLVND's dispatching libEGL, which finds NVIDIA's through its vendor file.
const EGL_LIBRARY: &str = "libEGL.so.1";
const NVIDIA_VENDOR_ID: u32 = 0x10DE;
/// `EGL_EXTENSIONS`, for `eglQueryString` and `eglQueryDeviceStringEXT`.
const EGL_EXTENSIONS: i32 = 0x3055;
/// The most EGL devices asked for; a node has eight GPUs at most.
const MAX_EGL_DEVICES: i32 = 64;

/// Where the probe reads the node's identity and driver.
#[derive(Debug, Clone)]
pub struct GraphicsProbe {
    /// The node's name (the downward API's `spec.nodeName`).
    pub node_name: String,
    /// The host's boot ID (`/host/proc/sys/kernel/random/boot_id`).
    pub boot_id: PathBuf,
    /// The NVIDIA kernel module's version file (`/proc/driver/nvidia/version`).
    pub driver_version_file: PathBuf,
}

impl GraphicsProbe {
    pub fn run(&self) -> GraphicsEvidence {
        let mut errors = Vec::new();
        let cuda = cuda::vector_add();
        errors.extend(cuda.errors.iter().cloned());
        let glx = glx(&mut errors);
        let egl_devices = egl(&mut errors);
        let (nvidia_device, vulkan_devices) = vulkan(&mut errors);
        let driver_version = std::fs::read_to_string(&self.driver_version_file)
            .ok()
            .and_then(|text| kernel_module_version(&text))
            .or(cuda.api_version)
            .unwrap_or_default();
        errors.truncate(MAX_ERRORS);
        GraphicsEvidence {
            schema: GRAPHICS_SCHEMA.into(),
            node_name: self.node_name.clone(),
            boot_id: read_trimmed(&self.boot_id),
            driver_version,
            cuda_devices: cuda.devices,
            cuda_passed_devices: cuda.passed_devices,
            vectoradd: cuda.vectoradd,
            glx,
            egl: if egl_devices > 0 {
                Library::Loaded
            } else {
                Library::Missing
            },
            egl_devices,
            nvidia_device,
            vulkan_devices,
            errors,
        }
    }
}

fn read_trimmed(path: &Path) -> String {
    std::fs::read_to_string(path)
        .map(|t| t.trim().to_string())
        .unwrap_or_default()
}

/// The version in the driver's proc file: `NVRM version: NVIDIA UNIX x86_64 Kernel Module
/// 580.173.02  …` (or `… Open Kernel Module for x86_64  580.173.02 …`): the first word of
/// that line made of digits and dots alone.
pub fn kernel_module_version(text: &str) -> Option<String> {
    let line = text.lines().find(|l| l.starts_with("NVRM version:"))?;
    line.split_whitespace()
        .find(|w| {
            w.contains('.') && w.bytes().all(|b| b.is_ascii_digit() || b == b'.') && w.len() <= 32
        })
        .map(str::to_string)
}

/// Whether NVIDIA's GLX vendor library loads and exposes GLVND's entry point (`__glx_Main`)
/// or GLX's own `glXGetProcAddress`. Loading is all: no display is needed or opened.
fn glx(errors: &mut Vec<String>) -> Library {
    let library = match open(GLX_LIBRARY) {
        Ok(l) => l,
        Err(e) => {
            errors.push(e);
            return Library::Missing;
        }
    };
    let found = ["__glx_Main", "glXGetProcAddress", "glXGetProcAddressARB"]
        .iter()
        // SAFETY: only looked up, never called.
        .any(|name| unsafe { symbol::<*mut c_void>(&library, GLX_LIBRARY, name) }.is_ok());
    if found {
        Library::Loaded
    } else {
        errors.push(format!(
            "{GLX_LIBRARY}: neither __glx_Main nor glXGetProcAddress"
        ));
        Library::Missing
    }
}

type EglGetProcAddress = unsafe extern "C" fn(*const c_char) -> *mut c_void;
type EglQueryString = unsafe extern "C" fn(*mut c_void, i32) -> *const c_char;
type EglQueryDevices = unsafe extern "C" fn(i32, *mut *mut c_void, *mut i32) -> u32;
type EglQueryDeviceString = unsafe extern "C" fn(*mut c_void, i32) -> *const c_char;
type EglGetError = unsafe extern "C" fn() -> i32;

/// Whether a space-separated extension string names `extension`.
///
/// # Safety
///
/// `text` is null or a NUL-terminated string.
unsafe fn has_extension(text: *const c_char, extension: &str) -> bool {
    // SAFETY: the caller vouches for `text`.
    !text.is_null()
        && unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .split_whitespace()
            .any(|e| e == extension)
}

/// How many EGL devices are NVIDIA's: `eglQueryDevicesEXT` (through `eglGetProcAddress`, after
/// the client extension says it is there), each device whose own extensions include
/// `EGL_NV_device_cuda`, the extension only NVIDIA's driver gives its devices.
fn egl(errors: &mut Vec<String>) -> u32 {
    match egl_devices() {
        Ok((0, all)) => {
            errors.push(format!("EGL: no NVIDIA device among {all} EGL device(s)"));
            0
        }
        Ok((nvidia, _)) => nvidia,
        Err(e) => {
            errors.push(error_line(&e));
            0
        }
    }
}

/// (NVIDIA's devices, all devices).
fn egl_devices() -> Result<(u32, u32), String> {
    let library = open(EGL_LIBRARY)?;
    // SAFETY: the EGL 1.5 signatures of these entry points; the extension functions are only
    // called once the client extensions say they exist, with their EGL_EXT_device_base
    // signatures, on devices the enumeration returned.
    unsafe {
        let get_proc: EglGetProcAddress = symbol(&library, EGL_LIBRARY, "eglGetProcAddress")?;
        let query_string: EglQueryString = symbol(&library, EGL_LIBRARY, "eglQueryString")?;
        let get_error: EglGetError = symbol(&library, EGL_LIBRARY, "eglGetError")?;
        // EGL_NO_DISPLAY: the client extensions.
        let client = query_string(null_mut(), EGL_EXTENSIONS);
        if !has_extension(client, "EGL_EXT_device_enumeration")
            && !has_extension(client, "EGL_EXT_device_base")
        {
            return Err("EGL: no EGL_EXT_device_enumeration".into());
        }
        let query_devices = get_proc(c"eglQueryDevicesEXT".as_ptr());
        let query_device_string = get_proc(c"eglQueryDeviceStringEXT".as_ptr());
        if query_devices.is_null() || query_device_string.is_null() {
            return Err("EGL: eglQueryDevicesEXT is not offered".into());
        }
        let query_devices = std::mem::transmute::<*mut c_void, EglQueryDevices>(query_devices);
        let query_device_string =
            std::mem::transmute::<*mut c_void, EglQueryDeviceString>(query_device_string);
        let mut devices = vec![null_mut::<c_void>(); MAX_EGL_DEVICES as usize];
        let mut count = 0;
        if query_devices(MAX_EGL_DEVICES, devices.as_mut_ptr(), &mut count) == 0 {
            return Err(format!("eglQueryDevicesEXT: EGL error {:#x}", get_error()));
        }
        devices.truncate(count.clamp(0, MAX_EGL_DEVICES) as usize);
        let nvidia = devices
            .iter()
            .filter(|d| {
                has_extension(
                    query_device_string(**d, EGL_EXTENSIONS),
                    "EGL_NV_device_cuda",
                )
            })
            .count();
        Ok((nvidia as u32, devices.len() as u32))
    }
}

/// The Vulkan loader, one instance (API 1.1, no layers, no extensions: nothing to present
/// to) and the physical devices with NVIDIA's vendor ID.
fn vulkan(errors: &mut Vec<String>) -> (VulkanDevice, u32) {
    // SAFETY: loads the system's Vulkan loader (libvulkan.so.1), which loads the drivers'
    // ICDs.
    let entry = match unsafe { ash::Entry::load() } {
        Ok(e) => e,
        Err(e) => {
            errors.push(error_line(&format!("Vulkan loader: {e}")));
            return (VulkanDevice::Missing, 0);
        }
    };
    let app = vk::ApplicationInfo::default()
        .application_name(c"fleetbot-probe")
        .api_version(vk::API_VERSION_1_1);
    let info = vk::InstanceCreateInfo::default().application_info(&app);
    // SAFETY: a valid create info with no layers or extensions; the instance is destroyed
    // below, after its last use.
    let found = unsafe {
        match entry.create_instance(&info, None) {
            Err(e) => Err(format!("vkCreateInstance: {e:?}")),
            Ok(instance) => {
                let devices = instance.enumerate_physical_devices().map(|list| {
                    list.iter()
                        .filter(|d| {
                            instance.get_physical_device_properties(**d).vendor_id
                                == NVIDIA_VENDOR_ID
                        })
                        .count()
                });
                instance.destroy_instance(None);
                devices.map_err(|e| format!("vkEnumeratePhysicalDevices: {e:?}"))
            }
        }
    };
    // The loader stays loaded, as the other vendor libraries do (see `dynlib::open`).
    std::mem::forget(entry);
    match found {
        Ok(0) => {
            errors.push("Vulkan: no physical device with NVIDIA's vendor ID".into());
            (VulkanDevice::Absent, 0)
        }
        Ok(n) => (VulkanDevice::Enumerated, n as u32),
        Err(e) => {
            errors.push(error_line(&e));
            (VulkanDevice::Missing, 0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::graphics_evidence::{VectorAdd, parse_graphics};

    fn probe(dir: &Path) -> GraphicsProbe {
        std::fs::write(dir.join("boot_id"), "6a4f-boot\n").unwrap();
        GraphicsProbe {
            node_name: "n1".into(),
            boot_id: dir.join("boot_id"),
            driver_version_file: dir.join("no-driver-here"),
        }
    }

    #[test]
    fn the_kernel_module_version_is_read_from_the_proc_file() {
        let proprietary = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\nGCC version:  gcc version 12.2.0\n";
        assert_eq!(
            kernel_module_version(proprietary).as_deref(),
            Some("535.104.05")
        );
        let open = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.173.02  Release Build  (dvs-builder@U22)  Tue Jan 6 2026\n";
        assert_eq!(kernel_module_version(open).as_deref(), Some("580.173.02"));
        assert_eq!(kernel_module_version("GCC version: 12.2.0\n"), None);
        assert_eq!(kernel_module_version(""), None);
    }

    /// On a machine without NVIDIA's driver (this one, CI's) every check says so, and the
    /// document is one the verifier accepts.
    #[test]
    fn without_a_gpu_the_probe_runs_and_reports_what_is_missing() {
        if Path::new("/dev/nvidiactl").exists() {
            eprintln!("skipped: an NVIDIA GPU is present");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let e = probe(dir.path()).run();
        assert_eq!(e.vectoradd, VectorAdd::Unavailable);
        assert_eq!((e.cuda_devices, e.cuda_passed_devices), (0, 0));
        assert_eq!(e.glx, Library::Missing);
        assert_eq!((e.egl, e.egl_devices), (Library::Missing, 0));
        assert!(matches!(
            e.nvidia_device,
            VulkanDevice::Missing | VulkanDevice::Absent
        ));
        assert_eq!(e.vulkan_devices, 0);
        assert_eq!(e.boot_id, "6a4f-boot");
        assert_eq!(e.driver_version, "");
        assert!(e.errors.iter().any(|l| l.starts_with("libcuda.so.1: ")));
        assert!(
            e.errors
                .iter()
                .any(|l| l.starts_with("libGLX_nvidia.so.0: "))
        );
        assert!(e.errors.iter().all(|l| !l.contains('/')), "{:?}", e.errors);
        let text = serde_json::to_string(&e).unwrap();
        assert_eq!(parse_graphics(&text).unwrap(), e);
    }

    /// Needs a real NVIDIA GPU with its driver's CUDA, GLX, EGL and Vulkan libraries (as the
    /// container toolkit injects them with `graphics` capability): ignored by default, run by
    /// `scripts/gpu-check.sh` on a GPU machine, and a failure anywhere else.
    #[test]
    #[ignore = "needs an NVIDIA GPU: scripts/gpu-check.sh runs it"]
    fn on_a_real_gpu_vectoradd_passes_and_vulkan_enumerates() {
        assert!(
            Path::new("/dev/nvidiactl").exists(),
            "no NVIDIA GPU here (/dev/nvidiactl): run it on a GPU machine, scripts/gpu-check.sh"
        );
        let dir = tempfile::tempdir().unwrap();
        let mut p = probe(dir.path());
        p.driver_version_file = PathBuf::from("/proc/driver/nvidia/version");
        let e = p.run();
        eprintln!("{}", serde_json::to_string_pretty(&e).unwrap());
        assert_eq!(e.vectoradd, VectorAdd::Passed, "{:?}", e.errors);
        assert!(e.cuda_devices > 0 && e.cuda_passed_devices == e.cuda_devices);
        assert_eq!(e.nvidia_device, VulkanDevice::Enumerated, "{:?}", e.errors);
        assert!(e.vulkan_devices > 0);
        assert!(!e.driver_version.is_empty());
        assert!(parse_graphics(&serde_json::to_string(&e).unwrap()).is_ok());
    }
}
