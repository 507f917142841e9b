//! Gradient clipping by the global norm over all parameters, as PyTorch's
//! `clip_grad_norm_` (Burn's own clipping works per parameter tensor).

use rosetta_model::burn::module::{Module, ModuleVisitor, Param};
use rosetta_model::burn::optim::GradientsParams;
use rosetta_model::burn::tensor::Tensor;

struct SquaredNorm<'a> {
    grads: &'a GradientsParams,
    total: Option<Tensor<1>>,
}

impl ModuleVisitor for SquaredNorm<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if let Some(grad) = self.grads.get::<D>(param.id) {
            let sq = grad.square().sum();
            self.total = Some(match self.total.take() {
                Some(total) => total + sq,
                None => sq,
            });
        }
    }
}

struct Scale<'a> {
    grads: &'a mut GradientsParams,
    factor: f64,
}

impl ModuleVisitor for Scale<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if let Some(grad) = self.grads.remove::<D>(param.id) {
            self.grads.register(param.id, grad.mul_scalar(self.factor));
        }
    }
}

/// The L2 norm of all gradients of `module` together.
pub fn global_norm<M: Module>(module: &M, grads: &GradientsParams) -> f64 {
    let mut visitor = SquaredNorm { grads, total: None };
    module.visit(&mut visitor);
    match visitor.total {
        Some(total) => (total.into_scalar::<f32>() as f64).sqrt(),
        None => 0.0,
    }
}

/// Scales the gradients so that their global norm is at most `max_norm`; returns the norm
/// before clipping.
pub fn clip_global_norm<M: Module>(module: &M, grads: &mut GradientsParams, max_norm: f64) -> f64 {
    let norm = global_norm(module, grads);
    if norm > max_norm && norm.is_finite() {
        let mut visitor = Scale {
            grads,
            factor: max_norm / (norm + 1e-6),
        };
        module.visit(&mut visitor);
    }
    norm
}
