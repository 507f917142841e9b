//! Choosing the backend and device by name at run time.
//!
//! A build compiles in `flex` (Burn's pure-Rust CPU backend, the default) and whichever other
//! backends its cargo features name (`ndarray`, `wgpu`, `vulkan`, `metal`, `cuda`, `rocm`,
//! `cpu`). [`parse_device`] turns a name such as `flex`, `ndarray`, `wgpu:cpu` or `cuda:0` into a
//! Burn [`Device`]; a backend that exists but was not compiled in is refused with the feature to
//! build with.

use std::fmt;

use burn::tensor::{Device, Tensor};

/// A backend Rosetta knows, whether or not this build has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backend {
    /// The name `--device` uses (before any `:index`).
    pub name: &'static str,
    /// The cargo feature that compiles it in (`None`: always compiled in).
    pub feature: Option<&'static str>,
    /// Whether this build has it.
    pub compiled: bool,
    /// One line for people.
    pub about: &'static str,
    /// Device names to try when listing what is visible (`rosetta info`).
    pub probes: &'static [&'static str],
}

/// Every backend Rosetta can be built with, the default first.
pub const BACKENDS: &[Backend] = &[
    Backend {
        name: "flex",
        feature: None,
        compiled: true,
        about: "Burn's pure-Rust CPU backend (SIMD, multi-threaded); the default",
        probes: &["flex"],
    },
    Backend {
        name: "ndarray",
        feature: Some("ndarray"),
        compiled: cfg!(feature = "ndarray"),
        about: "Burn's first CPU backend (deprecated upstream in favour of flex)",
        probes: &["ndarray"],
    },
    Backend {
        name: "wgpu",
        feature: Some("wgpu"),
        compiled: cfg!(feature = "wgpu"),
        about: "GPUs through wgpu (Vulkan, Metal, DirectX 12, WebGPU); `wgpu:cpu` is a software adapter",
        probes: &["wgpu", "wgpu:cpu"],
    },
    Backend {
        name: "vulkan",
        feature: Some("vulkan"),
        compiled: cfg!(feature = "vulkan"),
        about: "wgpu pinned to Vulkan (SPIR-V kernels)",
        probes: &["vulkan"],
    },
    Backend {
        name: "metal",
        feature: Some("metal"),
        compiled: cfg!(feature = "metal"),
        about: "wgpu pinned to Metal (MSL kernels)",
        probes: &["metal"],
    },
    Backend {
        name: "cuda",
        feature: Some("cuda"),
        compiled: cfg!(feature = "cuda"),
        about: "NVIDIA GPUs through CUDA",
        probes: &["cuda:0", "cuda:1", "cuda:2", "cuda:3"],
    },
    Backend {
        name: "rocm",
        feature: Some("rocm"),
        compiled: cfg!(feature = "rocm"),
        about: "AMD GPUs through ROCm/HIP",
        probes: &["rocm:0", "rocm:1"],
    },
    Backend {
        name: "cpu",
        feature: Some("cpu"),
        compiled: cfg!(feature = "cpu"),
        about: "CubeCL's CPU runtime (kernels compiled through MLIR/LLVM)",
        probes: &["cpu"],
    },
];

/// The names of the backends compiled into this build, the default first.
pub fn compiled_backends() -> Vec<&'static str> {
    BACKENDS
        .iter()
        .filter(|b| b.compiled)
        .map(|b| b.name)
        .collect()
}

/// Why a device name was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceError {
    /// The name as given.
    pub name: String,
    /// Why it cannot be used.
    pub reason: String,
}

impl fmt::Display for DeviceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "device `{}`: {}", self.name, self.reason)
    }
}

impl std::error::Error for DeviceError {}

/// The device named `spec`:
///
/// | name | device |
/// |---|---|
/// | `flex` | Burn's flex CPU backend (always compiled in) |
/// | `ndarray` | the ndarray CPU backend |
/// | `wgpu`, `wgpu:N`, `wgpu:integrated:N`, `wgpu:virtual:N`, `wgpu:cpu` | wgpu's best adapter, the N-th discrete GPU, an integrated or virtual GPU, a software (CPU) adapter |
/// | `vulkan[:…]`, `metal[:…]` | the same, pinned to one graphics API |
/// | `cuda`, `cuda:N` | the N-th CUDA GPU (default 0) |
/// | `rocm`, `rocm:N` | the N-th ROCm GPU |
/// | `cpu` | CubeCL's CPU runtime |
pub fn parse_device(spec: &str) -> Result<Device, DeviceError> {
    let spec = spec.trim();
    let (name, rest) = match spec.split_once(':') {
        Some((name, rest)) => (name, Some(rest)),
        None => (spec, None),
    };
    let error = |reason: String| DeviceError {
        name: spec.to_string(),
        reason,
    };
    let Some(backend) = BACKENDS.iter().find(|b| b.name == name) else {
        return Err(error(format!(
            "unknown backend `{name}`; known: {}",
            BACKENDS
                .iter()
                .map(|b| b.name)
                .collect::<Vec<_>>()
                .join(", ")
        )));
    };
    if !backend.compiled {
        return Err(error(format!(
            "the `{name}` backend is not compiled into this build; rebuild with `--features {}` \
             (this build has: {})",
            backend.feature.unwrap_or(name),
            compiled_backends().join(", ")
        )));
    }
    build(name, rest).map_err(error)
}

/// Constructs a compiled-in device; `rest` is what followed the first `:`.
#[allow(unused_variables)] // `rest` is unused in builds with CPU backends only.
fn build(name: &str, rest: Option<&str>) -> Result<Device, String> {
    let no_suffix = |device: Device| match rest {
        None => Ok(device),
        Some(r) => Err(format!("`{name}` takes no `:{r}` (it has one device)")),
    };
    match name {
        "flex" => no_suffix(Device::flex()),
        #[cfg(feature = "ndarray")]
        #[allow(deprecated)]
        // ndarray is deprecated upstream; we keep it working on purpose.
        "ndarray" => no_suffix(Device::ndarray()),
        #[cfg(feature = "cpu")]
        "cpu" => no_suffix(Device::cpu()),
        #[cfg(feature = "wgpu")]
        "wgpu" => Ok(Device::wgpu(device_kind(rest)?)),
        #[cfg(feature = "vulkan")]
        "vulkan" => Ok(Device::vulkan(device_kind(rest)?)),
        #[cfg(feature = "metal")]
        "metal" => Ok(Device::metal(device_kind(rest)?)),
        #[cfg(feature = "cuda")]
        "cuda" => Ok(Device::cuda(index(rest)?)),
        #[cfg(feature = "rocm")]
        "rocm" => Ok(Device::rocm(index(rest)?)),
        other => Err(format!(
            "backend `{other}` has no constructor in this build"
        )),
    }
}

/// `None` → 0; `"N"` → N.
#[cfg(any(feature = "cuda", feature = "rocm"))]
fn index(rest: Option<&str>) -> Result<usize, String> {
    match rest {
        None => Ok(0),
        Some(r) => r
            .parse()
            .map_err(|_| format!("`{r}` is not a device index (expected a number such as 0)")),
    }
}

/// The wgpu adapter a suffix names.
#[cfg(feature = "wgpu")]
fn device_kind(rest: Option<&str>) -> Result<burn::tensor::DeviceKind, String> {
    use burn::tensor::DeviceKind;
    let number = |s: &str| {
        s.parse::<usize>()
            .map_err(|_| format!("`{s}` is not an adapter index (expected a number such as 0)"))
    };
    match rest {
        None | Some("default") => Ok(DeviceKind::DefaultDevice),
        Some("cpu") => Ok(DeviceKind::Cpu),
        Some(r) => match r.split_once(':') {
            Some(("discrete", n)) => Ok(DeviceKind::DiscreteGpu(number(n)?)),
            Some(("integrated", n)) => Ok(DeviceKind::IntegratedGpu(number(n)?)),
            Some(("virtual", n)) => Ok(DeviceKind::VirtualGpu(number(n)?)),
            Some((kind, _)) => Err(format!(
                "unknown adapter kind `{kind}` (expected discrete, integrated or virtual)"
            )),
            None => Ok(DeviceKind::DiscreteGpu(number(r)?)),
        },
    }
}

/// Whether `device` works: runs a small computation on it and reads the result back. Burn
/// panics when a GPU backend finds no adapter; the panic is caught and reported as the error.
pub fn probe(device: &Device) -> Result<(), String> {
    let device = device.clone();
    let outcome = std::panic::catch_unwind(move || {
        let x = Tensor::<1>::from_floats([1.0, 2.0, 3.0], &device);
        x.clone().mul(x).sum().into_scalar::<f32>()
    });
    match outcome {
        Ok(v) if (v - 14.0).abs() < 1e-4 => Ok(()),
        Ok(v) => Err(format!("computed 1²+2²+3² = {v}, expected 14")),
        Err(panic) => Err(panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "the backend panicked".into())),
    }
}

/// The CPU devices compiled into this build, by name: `flex` always, `ndarray` when built with
/// it. The cross-backend tests run on each of these.
pub fn cpu_devices() -> Vec<(&'static str, Device)> {
    #[allow(unused_mut)] // Only pushed to in builds with ndarray.
    let mut devices = vec![("flex", Device::flex())];
    #[cfg(feature = "ndarray")]
    #[allow(deprecated)]
    devices.push(("ndarray", Device::ndarray()));
    devices
}

/// Whether `device` (or the device an autodiff device records on) computes in host memory: a
/// CPU backend, where values made or read on the host cost no transfer (dropout masks, the
/// training loss).
pub fn computes_in_host_memory(device: &Device) -> bool {
    let inner = device.clone().inner();
    cpu_devices().iter().any(|(_, cpu)| *cpu == inner)
}

/// Threads the CPU backends compute with (rayon's global pool): `RAYON_NUM_THREADS` when set,
/// else the available parallelism.
pub fn rayon_threads() -> usize {
    std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        })
}

/// The devices the cross-backend tests run on: the names in `ROSETTA_TEST_DEVICES`
/// (comma-separated, e.g. `flex,wgpu:cpu`) when set, else every CPU backend compiled in
/// ([`cpu_devices`]). A name that does not parse is an error naming it.
pub fn test_devices() -> Result<Vec<(String, Device)>, DeviceError> {
    match std::env::var("ROSETTA_TEST_DEVICES") {
        Ok(names) if !names.trim().is_empty() => names
            .split(',')
            .map(|name| Ok((name.trim().to_string(), parse_device(name)?)))
            .collect(),
        _ => Ok(cpu_devices()
            .into_iter()
            .map(|(name, device)| (name.to_string(), device))
            .collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flex_parses_and_works() {
        let device = parse_device("flex").expect("flex is always compiled in");
        probe(&device).expect("flex computes");
        assert_eq!(compiled_backends()[0], "flex");
    }

    #[test]
    fn unknown_backend_lists_the_known_ones() {
        let err = parse_device("tpu").unwrap_err();
        assert!(err.reason.contains("unknown backend `tpu`"), "{err}");
        assert!(err.reason.contains("flex, ndarray, wgpu"), "{err}");
    }

    #[test]
    fn backend_not_compiled_in_names_its_feature() {
        for backend in BACKENDS.iter().filter(|b| !b.compiled) {
            let err = parse_device(backend.probes[0]).unwrap_err();
            let feature = backend
                .feature
                .expect("only optional backends can be missing");
            assert!(
                err.reason.contains(&format!("--features {feature}")),
                "{err}"
            );
            assert!(err.to_string().contains(backend.probes[0]), "{err}");
        }
    }

    #[test]
    fn single_device_backends_refuse_an_index() {
        let err = parse_device("flex:1").unwrap_err();
        assert!(err.reason.contains("takes no `:1`"), "{err}");
    }

    #[test]
    fn compiled_list_matches_features() {
        let compiled = compiled_backends();
        assert_eq!(compiled.contains(&"ndarray"), cfg!(feature = "ndarray"));
        assert_eq!(compiled.contains(&"wgpu"), cfg!(feature = "wgpu"));
        assert_eq!(compiled.contains(&"cuda"), cfg!(feature = "cuda"));
        for (name, device) in cpu_devices() {
            probe(&device).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    #[cfg(feature = "wgpu")]
    #[test]
    fn wgpu_suffixes() {
        assert!(parse_device("wgpu:cpu").is_ok());
        assert!(parse_device("wgpu:0").is_ok());
        assert!(parse_device("wgpu:integrated:1").is_ok());
        let err = parse_device("wgpu:quantum:0").unwrap_err();
        assert!(err.reason.contains("unknown adapter kind"), "{err}");
        let err = parse_device("wgpu:x").unwrap_err();
        assert!(err.reason.contains("not an adapter index"), "{err}");
    }
}
