//! Choosing the device (and so the backend) by name at run time: [`rosetta_model::device`],
//! with its error folded into [`TrainError`].

use rosetta_model::burn::tensor::Device;
pub use rosetta_model::device::{BACKENDS, compiled_backends, cpu_devices, probe};

use crate::error::TrainError;

/// The device named `name` (`flex`, `ndarray`, `wgpu:cpu`, `cuda:0`, ...); see
/// [`rosetta_model::device::parse_device`].
pub fn parse_device(name: &str) -> Result<Device, TrainError> {
    rosetta_model::device::parse_device(name).map_err(|e| TrainError::Device {
        name: e.name,
        reason: e.reason,
    })
}
