//! Properties of the full model: shapes, causality, padding, parameter counts, configuration.

use rosetta_model::burn::module::Module;
use rosetta_model::burn::tensor::{Device, Int, Tensor, TensorData};
use rosetta_model::{Activation, ModelError, NormPosition, TransformerConfig, params};

mod common;

use common::small;

fn tokens(rows: &[&[i64]], device: &Device) -> Tensor<2, Int> {
    let flat: Vec<i64> = rows.iter().flat_map(|r| r.iter().copied()).collect();
    Tensor::from_data(TensorData::new(flat, [rows.len(), rows[0].len()]), device)
}

fn device() -> Device {
    let device = Device::flex();
    device.seed(42);
    device
}

#[test]
fn shapes_through_encode_decode_and_forward() {
    let device = device();
    let model = small(NormPosition::Post).init(&device).expect("valid");
    let src = tokens(&[&[4, 5, 6, 7, 0], &[8, 9, 0, 0, 0]], &device);
    let tgt = tokens(&[&[1, 3, 4], &[1, 5, 0]], &device);
    let encoded = model.encode(src.clone());
    assert_eq!(encoded.memory.dims(), [2, 5, 16]);
    assert_eq!(encoded.source_padding.dims(), [2, 5]);
    let out = model.decode_hidden(tgt.clone(), &encoded, true);
    assert_eq!(out.hidden.dims(), [2, 3, 16]);
    assert_eq!(out.cross_attention.len(), 2);
    assert_eq!(out.cross_attention[0].dims(), [2, 4, 3, 5]);
    assert_eq!(model.forward(src, tgt).dims(), [2, 3, 40]);
}

#[test]
fn decoder_is_causal_bit_for_bit() {
    for norm in [NormPosition::Post, NormPosition::Pre] {
        let device = device();
        let model = small(norm).init(&device).expect("valid");
        let src = tokens(&[&[4, 5, 6, 7]], &device);
        let a = model.forward(src.clone(), tokens(&[&[1, 3, 4, 9, 10, 11]], &device));
        let b = model.forward(src, tokens(&[&[1, 3, 4, 25, 2, 17]], &device));
        // Positions 0..3 see only tokens 0..3, which are the same in both targets.
        let prefix = |t: Tensor<3>| t.slice([0..1, 0..3, 0..40]).into_data();
        assert_eq!(
            prefix(a.clone()),
            prefix(b.clone()),
            "{norm:?}: prefix changed"
        );
        assert_ne!(
            a.slice([0..1, 3..4, 0..40]).into_data(),
            b.slice([0..1, 3..4, 0..40]).into_data(),
            "{norm:?}: position 3 must depend on its own token"
        );
    }
}

#[test]
fn source_padding_does_not_leak_into_outputs() {
    let device = device();
    let model = small(NormPosition::Post).init(&device).expect("valid");
    let tgt = tokens(&[&[1, 3, 4]], &device);
    let short = model.forward(tokens(&[&[4, 5, 6]], &device), tgt.clone());
    let padded = model.forward(tokens(&[&[4, 5, 6, 0, 0]], &device), tgt);
    short.into_data().assert_approx_eq::<f32>(
        &padded.into_data(),
        rosetta_model::burn::tensor::Tolerance::absolute(1e-5),
    );
}

#[test]
fn fully_padded_source_gives_finite_logits() {
    let device = device();
    let model = small(NormPosition::Pre).init(&device).expect("valid");
    let logits = model.forward(tokens(&[&[0, 0, 0]], &device), tokens(&[&[1, 3]], &device));
    let values = logits.into_data().try_to_vec::<f32>().expect("f32");
    assert!(values.iter().all(|v| v.is_finite()));
}

#[test]
fn parameter_count_equals_the_closed_form() {
    let device = device();
    let variants = [
        small(NormPosition::Post),
        small(NormPosition::Pre),
        small(NormPosition::Post).with_final_norm(Some(true)),
        TransformerConfig::new(40, 40)
            .with_d_model(16)
            .with_n_heads(2)
            .with_d_ff(24)
            .with_share_embeddings(true)
            .with_tie_output_projection(true)
            .with_activation(Activation::Gelu),
        TransformerConfig::new(40, 40)
            .with_d_model(16)
            .with_n_heads(2)
            .with_d_ff(24)
            .with_n_encoder_layers(3)
            .with_n_decoder_layers(1)
            .with_tie_output_projection(true),
    ];
    for config in variants {
        let model = config.init(&device).expect("valid");
        assert_eq!(
            model.num_params(),
            params::transformer(&config),
            "{config:?}"
        );
    }
}

#[test]
fn base_model_has_the_papers_size() {
    // Paper base model, 37k joint vocabulary with shared and tied embeddings: ~63M parameters
    // by the closed form (the paper's "65M" counts slightly differently).
    let config = TransformerConfig::new(37_000, 37_000)
        .with_share_embeddings(true)
        .with_tie_output_projection(true);
    let count = params::transformer(&config);
    assert_eq!(
        count,
        37_000 * 512 + 6 * params::encoder_layer(512, 2048) + 6 * params::decoder_layer(512, 2048)
    );
    assert_eq!(params::encoder_layer(512, 2048), 3_152_384);
    assert_eq!(params::decoder_layer(512, 2048), 4_204_032);
}

#[test]
fn tied_projection_shares_the_target_embedding() {
    let device = device();
    let config = small(NormPosition::Post).with_tie_output_projection(true);
    let model = config.init(&device).expect("valid");
    assert!(model.output_projection.is_none());
    let tgt = tokens(&[&[1, 3]], &device);
    let encoded = model.encode(tokens(&[&[4, 5]], &device));
    let hidden = model.decode_hidden(tgt.clone(), &encoded, false).hidden;
    let expected = hidden.matmul(
        model
            .target_embedding()
            .embedding
            .weight
            .val()
            .transpose()
            .unsqueeze(),
    );
    assert_eq!(
        model.decode(tgt, &encoded).into_data(),
        expected.into_data()
    );
}

#[test]
fn invalid_configurations_name_the_key() {
    let device = device();
    let cases: [(TransformerConfig, &str); 5] = [
        (small(NormPosition::Post).with_n_heads(5), "n_heads"),
        (
            small(NormPosition::Post).with_d_model(15).with_n_heads(1),
            "d_model",
        ),
        (small(NormPosition::Post).with_dropout(1.0), "dropout"),
        (
            small(NormPosition::Post).with_share_embeddings(true),
            "share_embeddings",
        ),
        (small(NormPosition::Post).with_pad_id(30), "pad_id"),
    ];
    for (config, key) in cases {
        match config.init(&device) {
            Err(ModelError::InvalidConfig { key: k, .. }) => assert_eq!(k, key),
            other => panic!("expected an error on `{key}`, got {other:?}"),
        }
    }
}

#[test]
fn dropout_is_active_only_on_an_autodiff_device_in_training() {
    let device = Device::flex().autodiff();
    device.seed(1);
    let model = small(NormPosition::Post)
        .with_dropout(0.5)
        .init(&device)
        .expect("valid");
    let src = tokens(&[&[4, 5, 6]], &device);
    let tgt = tokens(&[&[1, 3, 4]], &device);
    let a = model.forward(src.clone(), tgt.clone()).into_data();
    let b = model.forward(src.clone(), tgt.clone()).into_data();
    assert_ne!(a, b, "training forward passes draw different dropout masks");
    let eval = model.valid();
    let plain = Device::flex();
    let (src, tgt) = (tokens(&[&[4, 5, 6]], &plain), tokens(&[&[1, 3, 4]], &plain));
    assert_eq!(
        eval.forward(src.clone(), tgt.clone()).into_data(),
        eval.forward(src, tgt).into_data(),
        "evaluation is deterministic"
    );
}
