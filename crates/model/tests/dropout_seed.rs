//! Dropout masks are a pure function of the device seed (what makes resumed runs replay them).
//!
//! Alone in its own test binary: the CPU backends' generator is process-wide, so a test drawing
//! random numbers on another thread between `seed` and the draw would change the mask.

use rosetta_model::burn::tensor::{Device, Tensor};
use rosetta_model::dropout::DropoutConfig;

#[test]
fn the_same_seed_gives_the_same_mask_and_another_seed_another() {
    let dropout = DropoutConfig::new(0.5).init();
    let device = Device::flex().autodiff();
    let x = Tensor::<2>::ones([64, 64], &device);
    device.seed(5);
    let a = dropout.forward(x.clone()).into_data();
    device.seed(5);
    let b = dropout.forward(x.clone()).into_data();
    a.assert_eq(&b, true);
    device.seed(6);
    let c = dropout.forward(x).into_data();
    assert_ne!(a, c, "another seed draws another mask");
}
