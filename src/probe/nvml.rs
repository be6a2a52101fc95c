//! The MIG layout as the driver reports it, through NVML (`libnvidia-ml.so.1`, opened at run
//! time): each GPU's current MIG mode and its GPU instances' profiles and UUIDs. Only what a
//! pod holding the node's slices can read is asked; nothing is changed.

use std::ffi::{CStr, c_char, c_uint, c_void};

use super::dynlib::{open, symbol};
use super::graphics_evidence::error_line;
use super::mig_evidence::{MigMode, plausible_profile};

const LIBRARY: &str = "libnvidia-ml.so.1";
type NvmlReturn = c_uint;
type Device = *mut c_void;
const NVML_SUCCESS: NvmlReturn = 0;
const NVML_ERROR_NOT_SUPPORTED: NvmlReturn = 3;
const NVML_ERROR_NOT_FOUND: NvmlReturn = 6;
const NVML_DEVICE_MIG_ENABLE: c_uint = 1;
/// NVML's own buffer sizes for names, UUIDs and versions are all below this.
const BUFFER: usize = 96;

struct Nvml {
    init: unsafe extern "C" fn() -> NvmlReturn,
    shutdown: unsafe extern "C" fn() -> NvmlReturn,
    error_string: unsafe extern "C" fn(NvmlReturn) -> *const c_char,
    driver_version: unsafe extern "C" fn(*mut c_char, c_uint) -> NvmlReturn,
    count: unsafe extern "C" fn(*mut c_uint) -> NvmlReturn,
    by_index: unsafe extern "C" fn(c_uint, *mut Device) -> NvmlReturn,
    mig_mode: unsafe extern "C" fn(Device, *mut c_uint, *mut c_uint) -> NvmlReturn,
    max_mig: unsafe extern "C" fn(Device, *mut c_uint) -> NvmlReturn,
    mig_by_index: unsafe extern "C" fn(Device, c_uint, *mut Device) -> NvmlReturn,
    name: unsafe extern "C" fn(Device, *mut c_char, c_uint) -> NvmlReturn,
    uuid: unsafe extern "C" fn(Device, *mut c_char, c_uint) -> NvmlReturn,
}

/// One GPU instance: its profile, and the UUID a CUDA process selects it by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instance {
    pub profile: String,
    pub uuid: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gpu {
    pub index: u32,
    pub mig_mode: MigMode,
    pub instances: Vec<Instance>,
}

/// What NVML said.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Inventory {
    pub driver_version: String,
    pub gpus: Vec<Gpu>,
    pub errors: Vec<String>,
}

impl Nvml {
    fn load(name: &str) -> Result<Nvml, String> {
        let library = open(name)?;
        // SAFETY: each type is the function's signature in nvml.h for the exported name (the
        // `_v2` entry points are the current ABI); the library stays loaded (RTLD_NODELETE).
        unsafe {
            Ok(Nvml {
                init: symbol(&library, LIBRARY, "nvmlInit_v2")?,
                shutdown: symbol(&library, LIBRARY, "nvmlShutdown")?,
                error_string: symbol(&library, LIBRARY, "nvmlErrorString")?,
                driver_version: symbol(&library, LIBRARY, "nvmlSystemGetDriverVersion")?,
                count: symbol(&library, LIBRARY, "nvmlDeviceGetCount_v2")?,
                by_index: symbol(&library, LIBRARY, "nvmlDeviceGetHandleByIndex_v2")?,
                mig_mode: symbol(&library, LIBRARY, "nvmlDeviceGetMigMode")?,
                max_mig: symbol(&library, LIBRARY, "nvmlDeviceGetMaxMigDeviceCount")?,
                mig_by_index: symbol(&library, LIBRARY, "nvmlDeviceGetMigDeviceHandleByIndex")?,
                name: symbol(&library, LIBRARY, "nvmlDeviceGetName")?,
                uuid: symbol(&library, LIBRARY, "nvmlDeviceGetUUID")?,
            })
        }
    }

    fn error(&self, call: &str, code: NvmlReturn) -> String {
        // SAFETY: nvmlErrorString returns a static string for any code (or null).
        let text = unsafe { (self.error_string)(code) };
        let text = if text.is_null() {
            format!("error {code}")
        } else {
            // SAFETY: non-null, NUL-terminated, static.
            unsafe { CStr::from_ptr(text) }
                .to_string_lossy()
                .into_owned()
        };
        error_line(&format!("{call}: {text}"))
    }

    fn string(
        &self,
        call: &str,
        f: impl FnOnce(*mut c_char, c_uint) -> NvmlReturn,
    ) -> Result<String, String> {
        let mut buffer = [0 as c_char; BUFFER];
        let code = f(buffer.as_mut_ptr(), BUFFER as c_uint);
        if code != NVML_SUCCESS {
            return Err(self.error(call, code));
        }
        buffer[BUFFER - 1] = 0;
        // SAFETY: NUL-terminated within the buffer (forced above).
        Ok(unsafe { CStr::from_ptr(buffer.as_ptr()) }
            .to_string_lossy()
            .into_owned())
    }

    fn gpu(&self, index: u32, errors: &mut Vec<String>) -> Option<Gpu> {
        let mut device: Device = std::ptr::null_mut();
        // SAFETY: an out-pointer to a handle.
        let code = unsafe { (self.by_index)(index, &mut device) };
        if code != NVML_SUCCESS {
            errors.push(self.error("nvmlDeviceGetHandleByIndex", code));
            return None;
        }
        let (mut current, mut pending) = (0, 0);
        // SAFETY: a handle NVML gave, and two out-pointers.
        let mig_mode = match unsafe { (self.mig_mode)(device, &mut current, &mut pending) } {
            NVML_SUCCESS if current == NVML_DEVICE_MIG_ENABLE => MigMode::Enabled,
            NVML_SUCCESS => MigMode::Disabled,
            NVML_ERROR_NOT_SUPPORTED => MigMode::Unsupported,
            code => {
                errors.push(self.error("nvmlDeviceGetMigMode", code));
                MigMode::Unsupported
            }
        };
        let mut gpu = Gpu {
            index,
            mig_mode,
            instances: Vec::new(),
        };
        if mig_mode != MigMode::Enabled {
            return Some(gpu);
        }
        let mut slots = 0;
        // SAFETY: as above.
        let code = unsafe { (self.max_mig)(device, &mut slots) };
        if code != NVML_SUCCESS {
            errors.push(self.error("nvmlDeviceGetMaxMigDeviceCount", code));
            return Some(gpu);
        }
        for slot in 0..slots {
            let mut mig: Device = std::ptr::null_mut();
            // SAFETY: as above; an empty slot answers NOT_FOUND.
            match unsafe { (self.mig_by_index)(device, slot, &mut mig) } {
                NVML_SUCCESS => {}
                NVML_ERROR_NOT_FOUND => continue,
                code => {
                    errors.push(self.error("nvmlDeviceGetMigDeviceHandleByIndex", code));
                    continue;
                }
            }
            // SAFETY: a MIG handle NVML gave, and a buffer of the length passed.
            let name = self.string("nvmlDeviceGetName", |b, n| unsafe {
                (self.name)(mig, b, n)
            });
            // SAFETY: as above.
            let uuid = self.string("nvmlDeviceGetUUID", |b, n| unsafe {
                (self.uuid)(mig, b, n)
            });
            match (name, uuid) {
                (Ok(name), Ok(uuid)) => match profile_of(&name) {
                    Some(profile) => gpu.instances.push(Instance { profile, uuid }),
                    None => errors.push(error_line(&format!(
                        "GPU {index}: MIG device name {name:?} names no profile"
                    ))),
                },
                (Err(e), _) | (_, Err(e)) => errors.push(e),
            }
        }
        Some(gpu)
    }
}

/// The profile in a MIG device's name (`NVIDIA RTX PRO 6000 … MIG 1g.24gb` → `1g.24gb`).
pub fn profile_of(name: &str) -> Option<String> {
    let (_, profile) = name.rsplit_once("MIG ")?;
    plausible_profile(profile).then(|| profile.to_string())
}

/// Reads every GPU's MIG layout.
pub fn inventory() -> Inventory {
    inventory_with(LIBRARY)
}

fn inventory_with(library: &str) -> Inventory {
    let mut out = Inventory::default();
    let nvml = match Nvml::load(library) {
        Ok(n) => n,
        Err(e) => {
            out.errors.push(error_line(&e));
            return out;
        }
    };
    // SAFETY: no arguments; paired with the shutdown below.
    let code = unsafe { (nvml.init)() };
    if code != NVML_SUCCESS {
        out.errors.push(nvml.error("nvmlInit", code));
        return out;
    }
    // SAFETY: a buffer of the length passed.
    match nvml.string("nvmlSystemGetDriverVersion", |b, n| unsafe {
        (nvml.driver_version)(b, n)
    }) {
        Ok(v) => out.driver_version = v,
        Err(e) => out.errors.push(e),
    }
    let mut count = 0;
    // SAFETY: an out-pointer.
    let code = unsafe { (nvml.count)(&mut count) };
    if code != NVML_SUCCESS {
        out.errors.push(nvml.error("nvmlDeviceGetCount", code));
    }
    for index in 0..count {
        if let Some(gpu) = nvml.gpu(index, &mut out.errors) {
            out.gpus.push(gpu);
        }
    }
    // SAFETY: after init succeeded.
    unsafe { (nvml.shutdown)() };
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use std::process::Command;

    /// A stand-in libnvidia-ml (fixtures/probe/fake_libnvml.c) built with the system's C
    /// compiler, so the probe's real calls and buffers are exercised without a GPU. Without a
    /// C compiler the test fails rather than passing untested: building fleetbot needs one
    /// already (ring's C code), so a machine that runs the tests has one.
    fn fake(dir: &Path, name: &str, defines: &[&str]) -> String {
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/probe/fake_libnvml.c");
        let out = dir.join(name);
        let built = Command::new("cc")
            .args(["-shared", "-fPIC", "-O1", "-o"])
            .arg(&out)
            .args(defines)
            .arg(&source)
            .status()
            .unwrap_or_else(|e| panic!("`cc` (the C compiler the build uses) cannot run: {e}"));
        assert!(built.success(), "the stand-in NVML must compile");
        out.to_string_lossy().into_owned()
    }

    #[test]
    fn profiles_come_from_mig_device_names() {
        assert_eq!(
            profile_of("NVIDIA RTX PRO 6000 Blackwell Server Edition MIG 1g.24gb").as_deref(),
            Some("1g.24gb")
        );
        assert_eq!(profile_of("NVIDIA H200"), None);
        assert_eq!(profile_of("X MIG huge"), None);
    }

    #[test]
    fn a_balanced_gpu_lists_its_three_instances_and_their_uuids() {
        let dir = tempfile::tempdir().unwrap();
        let lib = fake(dir.path(), "libnvml-balanced.so", &[]);
        let inv = inventory_with(&lib);
        assert_eq!(inv.errors, Vec::<String>::new());
        assert_eq!(inv.driver_version, "580.173.02");
        assert_eq!(inv.gpus.len(), 1);
        let gpu = &inv.gpus[0];
        assert_eq!(gpu.mig_mode, MigMode::Enabled);
        let profiles: Vec<&str> = gpu.instances.iter().map(|i| i.profile.as_str()).collect();
        assert_eq!(profiles, ["1g.24gb", "1g.24gb", "2g.48gb"]);
        assert!(gpu.instances.iter().all(|i| i.uuid.starts_with("MIG-")));
    }

    #[test]
    fn mig_off_unsupported_and_failures_are_states_and_lines() {
        let dir = tempfile::tempdir().unwrap();
        let off = fake(dir.path(), "libnvml-off.so", &["-DFAKE_MIG_OFF"]);
        let inv = inventory_with(&off);
        assert_eq!(inv.gpus[0].mig_mode, MigMode::Disabled);
        assert!(inv.gpus[0].instances.is_empty());
        let unsupported = fake(dir.path(), "libnvml-none.so", &["-DFAKE_NO_MIG"]);
        let inv = inventory_with(&unsupported);
        assert_eq!(inv.gpus[0].mig_mode, MigMode::Unsupported);
        assert_eq!(inv.errors, Vec::<String>::new());
        let broken = fake(dir.path(), "libnvml-broken.so", &["-DFAKE_INIT_FAILS"]);
        let inv = inventory_with(&broken);
        assert!(inv.gpus.is_empty());
        assert_eq!(inv.errors, ["nvmlInit: Driver Not Loaded"]);
        let missing = inventory_with("libfleetbot-no-nvml.so.1");
        assert!(missing.errors[0].starts_with("libfleetbot-no-nvml.so.1"));
    }
}
