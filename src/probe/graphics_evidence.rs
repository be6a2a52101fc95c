//! The graphics probe's evidence document (`fleetbot.probe.graphics/v1`) and its strict
//! parsing: exactly one object of this schema, every field present and none unknown, each
//! state one of its few words, and counts that agree with the states, so a garbled or
//! half-written document can never read as a working GPU.

use serde::{Deserialize, Serialize};

use super::evidence::{EvidenceError, document};

pub const GRAPHICS_SCHEMA: &str = "fleetbot.probe.graphics/v1";

/// The longest error line the probe writes, in characters; the parser refuses longer ones.
pub const MAX_ERROR_CHARS: usize = 200;
/// The most error lines one document carries (eight failing GPUs and every library fit).
pub const MAX_ERRORS: usize = 32;

/// The CUDA driver API's vectorAdd on the worker's GPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VectorAdd {
    /// Every device ran the kernel and every element came back right.
    Passed,
    /// libcuda is there, but initialising it or some device's run failed.
    Failed,
    /// libcuda.so.1 could not be loaded, or lacks the driver API.
    Unavailable,
}

/// A vendor library (GLX) or an API with an NVIDIA device behind it (EGL).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Library {
    Loaded,
    Missing,
}

/// What the Vulkan loader found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VulkanDevice {
    /// At least one physical device with NVIDIA's vendor ID.
    Enumerated,
    /// An instance was created, but no NVIDIA device was among its physical devices.
    Absent,
    /// No loader, no instance, or the enumeration failed.
    Missing,
}

/// What one GPU worker proves about its NVIDIA stack from inside a pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphicsEvidence {
    pub schema: String,
    /// The node the probe ran on (from the downward API), compared with the pod's pinning.
    pub node_name: String,
    /// The node's boot ID as its kernel reports it.
    pub boot_id: String,
    /// The kernel module's version (`580.173.02`) when the driver's proc file is readable,
    /// else the CUDA driver API's (`13.0`); empty when neither is known.
    pub driver_version: String,
    /// Devices the CUDA driver API counts.
    pub cuda_devices: u32,
    /// Devices on which vectorAdd ran and every element was right.
    pub cuda_passed_devices: u32,
    pub vectoradd: VectorAdd,
    /// `libGLX_nvidia.so.0`, the vendor library the NVIDIA container toolkit injects.
    pub glx: Library,
    /// libEGL, with at least one NVIDIA EGL device.
    pub egl: Library,
    /// EGL devices that are NVIDIA's (`EGL_NV_device_cuda` among their extensions).
    pub egl_devices: u32,
    pub nvidia_device: VulkanDevice,
    /// Vulkan physical devices with NVIDIA's vendor ID (0x10DE).
    pub vulkan_devices: u32,
    /// Why a check did not pass: one short line each, library file names but no paths.
    pub errors: Vec<String>,
}

/// One error line as the evidence may carry it: on one line, any path shortened to its file
/// name (a loader's message names the library's full path), at most [`MAX_ERROR_CHARS`].
pub fn error_line(text: &str) -> String {
    let words: Vec<&str> = text
        .split_whitespace()
        .map(|w| match w.rfind('/') {
            // `/usr/lib/libcuda.so.1:` keeps `libcuda.so.1:`; a word that is only slashes
            // keeps nothing.
            Some(i) => &w[i + 1..],
            None => w,
        })
        .filter(|w| !w.is_empty())
        .collect();
    let line: String = words
        .join(" ")
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    line.chars().take(MAX_ERROR_CHARS).collect()
}

/// Whether a driver version is empty or only digits and dots, as both sources write it.
fn plausible_version(text: &str) -> bool {
    text.is_empty()
        || (text.len() <= 32
            && text.bytes().all(|b| b.is_ascii_digit() || b == b'.')
            && text.bytes().any(|b| b.is_ascii_digit()))
}

pub fn parse_graphics(output: &str) -> Result<GraphicsEvidence, EvidenceError> {
    let e: GraphicsEvidence = serde_json::from_str(document(output)?)
        .map_err(|e| EvidenceError::Malformed(e.to_string()))?;
    check_header(
        &e.schema,
        GRAPHICS_SCHEMA,
        &e.node_name,
        &e.boot_id,
        &e.driver_version,
    )?;
    if e.cuda_passed_devices > e.cuda_devices {
        return Err(EvidenceError::Invalid("cuda_passed_devices"));
    }
    // The state and the counts say the same thing, or the document is not the probe's.
    let all_passed = e.cuda_devices > 0 && e.cuda_passed_devices == e.cuda_devices;
    let vectoradd_agrees = match e.vectoradd {
        VectorAdd::Passed => all_passed,
        VectorAdd::Failed => !all_passed,
        VectorAdd::Unavailable => e.cuda_devices == 0,
    };
    if !vectoradd_agrees {
        return Err(EvidenceError::Invalid("vectoradd"));
    }
    if (e.egl == Library::Loaded) != (e.egl_devices > 0) {
        return Err(EvidenceError::Invalid("egl_devices"));
    }
    if (e.nvidia_device == VulkanDevice::Enumerated) != (e.vulkan_devices > 0) {
        return Err(EvidenceError::Invalid("vulkan_devices"));
    }
    if !tidy_errors(&e.errors) {
        return Err(EvidenceError::Invalid("errors"));
    }
    Ok(e)
}

/// The fields every GPU probe document starts with: its schema, the node and boot it ran on,
/// and a driver version that is empty or only digits and dots.
pub(crate) fn check_header(
    schema: &str,
    expected: &'static str,
    node_name: &str,
    boot_id: &str,
    driver_version: &str,
) -> Result<(), EvidenceError> {
    if schema != expected {
        return Err(EvidenceError::Schema {
            found: schema.to_string(),
            expected,
        });
    }
    if node_name.is_empty() {
        return Err(EvidenceError::Invalid("node_name"));
    }
    if boot_id.is_empty() {
        return Err(EvidenceError::Invalid("boot_id"));
    }
    if !plausible_version(driver_version) {
        return Err(EvidenceError::Invalid("driver_version"));
    }
    Ok(())
}

/// Whether error lines are as the probe writes them: few, short, one line each.
pub(crate) fn tidy_errors(errors: &[String]) -> bool {
    errors.len() <= MAX_ERRORS
        && errors.iter().all(|l| {
            !l.is_empty()
                && l.chars().count() <= MAX_ERROR_CHARS
                && !l.chars().any(char::is_control)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn working() -> GraphicsEvidence {
        GraphicsEvidence {
            schema: GRAPHICS_SCHEMA.into(),
            node_name: "n1".into(),
            boot_id: "b".into(),
            driver_version: "580.173.02".into(),
            cuda_devices: 8,
            cuda_passed_devices: 8,
            vectoradd: VectorAdd::Passed,
            glx: Library::Loaded,
            egl: Library::Loaded,
            egl_devices: 8,
            nvidia_device: VulkanDevice::Enumerated,
            vulkan_devices: 8,
            errors: Vec::new(),
        }
    }

    #[test]
    fn a_whole_document_parses_and_anything_less_is_refused() {
        let text = serde_json::to_string(&working()).unwrap();
        assert!(text.contains("\"vectoradd\":\"passed\""));
        assert!(text.contains("\"nvidia_device\":\"enumerated\""));
        assert_eq!(
            parse_graphics(&format!("warning: x\n{text}\n")).unwrap(),
            working()
        );
        assert_eq!(parse_graphics("  \n"), Err(EvidenceError::Missing));
        for field in [
            "schema",
            "node_name",
            "boot_id",
            "driver_version",
            "cuda_devices",
            "cuda_passed_devices",
            "vectoradd",
            "glx",
            "egl",
            "egl_devices",
            "nvidia_device",
            "vulkan_devices",
            "errors",
        ] {
            let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
            v.as_object_mut().unwrap().remove(field);
            assert!(
                matches!(
                    parse_graphics(&v.to_string()),
                    Err(EvidenceError::Malformed(_))
                ),
                "{field} may not be left out"
            );
        }
        let extra = text.replacen('{', "{\"passed\":true,", 1);
        assert!(matches!(
            parse_graphics(&extra),
            Err(EvidenceError::Malformed(_))
        ));
        let other = text.replace(GRAPHICS_SCHEMA, "fleetbot.probe.graphics/v2");
        assert!(matches!(
            parse_graphics(&other),
            Err(EvidenceError::Schema { .. })
        ));
        // A state outside its words, or in other case, is not a state.
        for (from, to) in [
            ("\"passed\"", "\"ok\""),
            ("\"passed\"", "\"Passed\""),
            ("\"enumerated\"", "\"present\""),
            ("\"glx\":\"loaded\"", "\"glx\":\"yes\""),
        ] {
            assert!(matches!(
                parse_graphics(&text.replace(from, to)),
                Err(EvidenceError::Malformed(_))
            ));
        }
        assert!(
            parse_graphics(&text.replace("\"cuda_devices\":8", "\"cuda_devices\":-1")).is_err()
        );
        assert!(parse_graphics(&format!("{text}{text}")).is_err());
    }

    #[test]
    fn counts_must_agree_with_the_states() {
        type Fault = Box<dyn Fn(&mut GraphicsEvidence)>;
        let cases: Vec<(Fault, &str)> = vec![
            (
                Box::new(|e| e.cuda_passed_devices = 9),
                "cuda_passed_devices",
            ),
            (Box::new(|e| e.cuda_passed_devices = 7), "vectoradd"),
            (
                Box::new(|e| {
                    e.cuda_devices = 0;
                    e.cuda_passed_devices = 0
                }),
                "vectoradd",
            ),
            (Box::new(|e| e.vectoradd = VectorAdd::Failed), "vectoradd"),
            (
                Box::new(|e| e.vectoradd = VectorAdd::Unavailable),
                "vectoradd",
            ),
            (Box::new(|e| e.egl_devices = 0), "egl_devices"),
            (Box::new(|e| e.egl = Library::Missing), "egl_devices"),
            (Box::new(|e| e.vulkan_devices = 0), "vulkan_devices"),
            (
                Box::new(|e| e.nvidia_device = VulkanDevice::Absent),
                "vulkan_devices",
            ),
            (Box::new(|e| e.node_name.clear()), "node_name"),
            (Box::new(|e| e.boot_id.clear()), "boot_id"),
            (
                Box::new(|e| e.driver_version = "580 (beta)".into()),
                "driver_version",
            ),
            (Box::new(|e| e.errors = vec![String::new()]), "errors"),
            (Box::new(|e| e.errors = vec!["a\nb".into()]), "errors"),
            (Box::new(|e| e.errors = vec!["x".repeat(201)]), "errors"),
            (Box::new(|e| e.errors = vec!["x".into(); 33]), "errors"),
        ];
        for (fault, field) in cases {
            let mut e = working();
            fault(&mut e);
            let text = serde_json::to_string(&e).unwrap();
            assert_eq!(
                parse_graphics(&text),
                Err(EvidenceError::Invalid(field)),
                "{text}"
            );
        }
        // A node without a GPU stack is a consistent document: the verdict is the verifier's.
        let bare = GraphicsEvidence {
            driver_version: String::new(),
            cuda_devices: 0,
            cuda_passed_devices: 0,
            vectoradd: VectorAdd::Unavailable,
            glx: Library::Missing,
            egl: Library::Missing,
            egl_devices: 0,
            nvidia_device: VulkanDevice::Missing,
            vulkan_devices: 0,
            errors: vec!["libcuda.so.1: cannot open shared object file".into()],
            ..working()
        };
        let text = serde_json::to_string(&bare).unwrap();
        assert_eq!(parse_graphics(&text).unwrap(), bare);
        let failed_one = GraphicsEvidence {
            cuda_passed_devices: 7,
            vectoradd: VectorAdd::Failed,
            ..working()
        };
        assert!(parse_graphics(&serde_json::to_string(&failed_one).unwrap()).is_ok());
    }

    #[test]
    fn error_lines_are_short_single_lines_without_paths() {
        assert_eq!(
            error_line("/usr/lib/x86_64-linux-gnu/libcuda.so.1: undefined symbol: cuInit\n  at x"),
            "libcuda.so.1: undefined symbol: cuInit at x"
        );
        assert_eq!(error_line("a / b\tc"), "a b c");
        assert_eq!(
            error_line(&"é".repeat(500)).chars().count(),
            MAX_ERROR_CHARS
        );
    }

    fn state<T: Clone + std::fmt::Debug + 'static>(all: &[T]) -> impl Strategy<Value = T> {
        proptest::sample::select(all.to_vec())
    }

    proptest! {
        #[test]
        fn any_output_is_parsed_or_refused_without_a_panic(text in "\\PC{0,600}") {
            let _ = parse_graphics(&text);
        }

        #[test]
        fn a_document_is_accepted_only_when_its_counts_and_states_agree(
            devices in 0u32..10,
            passed in 0u32..10,
            vectoradd in state(&[VectorAdd::Passed, VectorAdd::Failed, VectorAdd::Unavailable]),
            egl in state(&[Library::Loaded, Library::Missing]),
            egl_devices in 0u32..3,
            vulkan in state(&[VulkanDevice::Enumerated, VulkanDevice::Absent, VulkanDevice::Missing]),
            vulkan_devices in 0u32..3,
            error in "\\PC{0,250}",
        ) {
            let e = GraphicsEvidence {
                cuda_devices: devices,
                cuda_passed_devices: passed,
                vectoradd,
                egl,
                egl_devices,
                nvidia_device: vulkan,
                vulkan_devices,
                errors: vec![error_line(&error)].into_iter().filter(|l| !l.is_empty()).collect(),
                ..working()
            };
            let parsed = parse_graphics(&serde_json::to_string(&e).unwrap());
            if let Ok(p) = parsed {
                prop_assert_eq!(&p, &e);
                prop_assert!(p.cuda_passed_devices <= p.cuda_devices);
                prop_assert_eq!(
                    p.vectoradd == VectorAdd::Passed,
                    p.cuda_devices > 0 && p.cuda_passed_devices == p.cuda_devices
                );
                prop_assert_eq!(p.egl == Library::Loaded, p.egl_devices > 0);
                prop_assert_eq!(p.nvidia_device == VulkanDevice::Enumerated, p.vulkan_devices > 0);
            } else {
                // Refused only for disagreeing counts: the error line is always acceptable.
                let agrees = passed <= devices
                    && match vectoradd {
                        VectorAdd::Passed => devices > 0 && passed == devices,
                        VectorAdd::Failed => !(devices > 0 && passed == devices),
                        VectorAdd::Unavailable => devices == 0,
                    }
                    && (egl == Library::Loaded) == (egl_devices > 0)
                    && (vulkan == VulkanDevice::Enumerated) == (vulkan_devices > 0);
                prop_assert!(!agrees);
            }
        }
    }
}
