//! Choosing the device (and so the backend) by name at run time.

use rosetta_model::burn::tensor::Device;

use crate::error::TrainError;

/// The backends compiled into this build, by the names [`parse_device`] accepts.
pub fn compiled_backends() -> Vec<&'static str> {
    vec!["flex"]
}

/// The device named `name`: `flex` (Burn's pure-Rust CPU backend, the default).
pub fn parse_device(name: &str) -> Result<Device, TrainError> {
    match name {
        "flex" | "cpu" => Ok(Device::flex()),
        other => Err(TrainError::Device {
            name: other.to_string(),
            reason: format!(
                "unknown or not compiled in; this build has: {}",
                compiled_backends().join(", ")
            ),
        }),
    }
}
