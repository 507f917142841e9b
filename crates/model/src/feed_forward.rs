//! The position-wise feed-forward network: `Linear -> activation -> dropout -> Linear`.

use burn::config::Config;
use burn::module::Module;
use burn::nn::Linear;

use crate::dropout::{Dropout, DropoutConfig};
use burn::tensor::{Device, Tensor};

use crate::activation::Activation;
use crate::init;
use crate::int8::{self, FeedForwardInt8};
use crate::split_product;

/// Two linear maps with an activation between them, applied to every position independently:
/// `W_2 · dropout(act(W_1 x + b_1)) + b_2`.
#[derive(Module, Debug)]
pub struct PositionWiseFeedForward {
    /// `d_model -> d_ff`.
    pub linear_inner: Linear,
    /// `d_ff -> d_model`.
    pub linear_outer: Linear,
    /// Dropout after the activation.
    pub dropout: Dropout,
    /// The activation.
    #[module(skip)]
    pub activation: Activation,
    /// Both maps in int8 ([`quantize_int8`](Self::quantize_int8)); `None` runs them in
    /// floating point.
    #[module(skip)]
    pub int8: Option<FeedForwardInt8>,
}

/// The settings of a [`PositionWiseFeedForward`].
#[derive(Config, Debug)]
pub struct PositionWiseFeedForwardConfig {
    /// Width of the input and output.
    pub d_model: usize,
    /// Inner width.
    pub d_ff: usize,
    /// Dropout after the activation.
    #[config(default = 0.1)]
    pub dropout: f64,
    /// The activation.
    #[config(default = "Activation::Relu")]
    pub activation: Activation,
}

impl PositionWiseFeedForwardConfig {
    /// Builds the network: both linear maps Xavier-uniform with zero biases.
    pub fn init(&self, device: &Device) -> PositionWiseFeedForward {
        PositionWiseFeedForward {
            linear_inner: init::linear(self.d_model, self.d_ff, device),
            linear_outer: init::linear(self.d_ff, self.d_model, device),
            dropout: DropoutConfig::new(self.dropout).init(),
            activation: self.activation,
            int8: None,
        }
    }
}

impl PositionWiseFeedForward {
    /// Builds the network (short for [`PositionWiseFeedForwardConfig::init`]).
    pub fn new(
        d_model: usize,
        d_ff: usize,
        dropout: f64,
        activation: Activation,
        device: &Device,
    ) -> Self {
        PositionWiseFeedForwardConfig::new(d_model, d_ff)
            .with_dropout(dropout)
            .with_activation(activation)
            .init(device)
    }

    /// `[batch, len, d_model] -> [batch, len, d_model]`.
    pub fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        if let Some(maps) = self.int8.as_ref().filter(|_| int8::runs_on(&x.device())) {
            let hidden = self.activation.forward(int8::linear(x, &maps.inner));
            return int8::linear(self.dropout.forward(hidden), &maps.outer);
        }
        let hidden = self
            .activation
            .forward(split_product::forward(&self.linear_inner, x));
        split_product::forward(&self.linear_outer, self.dropout.forward(hidden))
    }

    /// Gives both maps an int8 form ([`FeedForwardInt8`]), used from then on where
    /// [`int8::runs_on`] the input's device; the float weights stay.
    pub fn quantize_int8(&mut self) {
        self.int8 = Some(FeedForwardInt8::new(&self.linear_inner, &self.linear_outer));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params;
    use burn::tensor::Distribution;

    #[test]
    fn shape_and_parameter_count() {
        let device = Device::flex();
        let ff = PositionWiseFeedForward::new(512, 2048, 0.1, Activation::Relu, &device);
        assert_eq!(ff.num_params(), 2_099_712);
        assert_eq!(params::feed_forward(512, 2048), 2_099_712);
        let small = PositionWiseFeedForward::new(8, 32, 0.0, Activation::Gelu, &device);
        let x = Tensor::<3>::random([2, 3, 8], Distribution::Default, &device);
        assert_eq!(small.forward(x).dims(), [2, 3, 8]);
    }

    #[test]
    fn acts_on_each_position_independently() {
        let device = Device::flex();
        device.seed(5);
        let ff = PositionWiseFeedForward::new(8, 16, 0.0, Activation::Relu, &device);
        let x = Tensor::<3>::random([1, 4, 8], Distribution::Normal(0.0, 1.0), &device);
        let whole = ff.forward(x.clone());
        let last = ff.forward(x.slice([0..1, 3..4, 0..8]));
        assert_eq!(
            whole.slice([0..1, 3..4, 0..8]).into_data(),
            last.into_data()
        );
    }
}
