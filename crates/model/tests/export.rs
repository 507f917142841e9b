//! The PyTorch-layout export: exported, written as safetensors and imported into a model with
//! other initial weights, a model gives the same logits bit for bit, for every layout option
//! (post-/pre-norm, final norms, shared embeddings, tied projection, other key names).

use std::collections::HashMap;

use rosetta_model::burn::tensor::{Device, Int, Tensor, TensorData};
use rosetta_model::export::write_safetensors;
use rosetta_model::{
    NormPosition, TorchImport, TorchNames, Transformer, TransformerConfig, torch_state_dict,
};

fn config(norm: NormPosition, shared: bool, final_norm: Option<bool>) -> TransformerConfig {
    let vocab = if shared { 30 } else { 40 };
    TransformerConfig::new(30, vocab)
        .with_d_model(16)
        .with_n_heads(4)
        .with_d_ff(24)
        .with_n_encoder_layers(2)
        .with_n_decoder_layers(3)
        .with_dropout(0.0)
        .with_attention_dropout(0.0)
        .with_max_positions(32)
        .with_norm_position(norm)
        .with_final_norm(final_norm)
        .with_share_embeddings(shared)
        .with_tie_output_projection(shared)
}

fn tokens(rows: &[&[i64]], device: &Device) -> Tensor<2, Int> {
    let flat: Vec<i64> = rows.iter().flat_map(|r| r.iter().copied()).collect();
    Tensor::from_data(TensorData::new(flat, [rows.len(), rows[0].len()]), device)
}

fn logits(model: &Transformer, device: &Device) -> TensorData {
    let source = tokens(&[&[4, 5, 6, 7, 3], &[8, 9, 3, 0, 0]], device);
    let target = tokens(&[&[2, 11, 12, 13], &[2, 14, 0, 0]], device);
    model.forward(source, target).into_data()
}

fn round_trip(config: &TransformerConfig, names: TorchNames) {
    let device = Device::flex();
    device.seed(7);
    let model = config.init(&device).expect("valid");
    let state = torch_state_dict(&model, config, &names).expect("export");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("model.safetensors");
    write_safetensors(&state, HashMap::new(), &path).expect("write");

    device.seed(8);
    let mut imported = config.init(&device).expect("valid");
    assert_ne!(logits(&model, &device), logits(&imported, &device));
    TorchImport::new(&path)
        .with_names(names)
        .load_into(&mut imported, config)
        .expect("import");
    assert_eq!(
        logits(&model, &device),
        logits(&imported, &device),
        "{config:?}"
    );
}

#[test]
fn export_then_import_gives_the_same_logits_bit_for_bit() {
    for (norm, shared, final_norm) in [
        (NormPosition::Post, false, None),
        (NormPosition::Pre, false, None),
        (NormPosition::Post, true, Some(true)),
        (NormPosition::Pre, true, Some(false)),
    ] {
        round_trip(&config(norm, shared, final_norm), TorchNames::default());
    }
    // The layout of scripts/rosetta_torch.py: no `transformer.` prefix.
    let names = TorchNames {
        transformer: String::new(),
        ..TorchNames::default()
    };
    round_trip(&config(NormPosition::Pre, true, None), names);
}

#[test]
fn the_state_dict_has_pytorchs_keys_shapes_and_packing() {
    let device = Device::flex();
    device.seed(3);
    let config = config(NormPosition::Post, true, None);
    let model = config.init(&device).expect("valid");
    let state = torch_state_dict(&model, &config, &TorchNames::default()).expect("export");
    let shape = |key: &str| -> Vec<usize> {
        state
            .get(key)
            .unwrap_or_else(|| panic!("no `{key}` in {:?}", state.keys().collect::<Vec<_>>()))
            .shape()
            .iter()
            .copied()
            .collect()
    };
    let t = "transformer.";
    assert_eq!(
        shape(&format!("{t}encoder.layers.0.self_attn.in_proj_weight")),
        [48, 16]
    );
    assert_eq!(
        shape(&format!("{t}encoder.layers.0.self_attn.in_proj_bias")),
        [48]
    );
    assert_eq!(
        shape(&format!(
            "{t}decoder.layers.2.multihead_attn.out_proj.weight"
        )),
        [16, 16]
    );
    assert_eq!(
        shape(&format!("{t}decoder.layers.2.linear1.weight")),
        [24, 16]
    );
    assert_eq!(
        shape(&format!("{t}decoder.layers.2.linear2.weight")),
        [16, 24]
    );
    assert_eq!(shape(&format!("{t}decoder.layers.2.norm3.weight")), [16]);
    // Shared and tied: the one table under all three names, as `state_dict()` lists it.
    let table = &state["source_embedding.weight"];
    assert_eq!(&state["target_embedding.weight"], table);
    assert_eq!(&state["output_projection.weight"], table);
    assert!(!state.contains_key("output_projection.bias"));
    assert!(!state.contains_key(&format!("{t}encoder.norm.weight")));

    // The packed rows are the query, key and value projections, each transposed to [out, in].
    let packed = state[&format!("{t}encoder.layers.0.self_attn.in_proj_weight")]
        .try_to_vec::<f32>()
        .expect("f32");
    let attention = &model.encoder.layers[0].self_attention;
    for (k, linear) in [&attention.w_q, &attention.w_k, &attention.w_v]
        .into_iter()
        .enumerate()
    {
        let ours = linear
            .weight
            .val()
            .into_data()
            .try_to_vec::<f32>()
            .expect("f32");
        for out in 0..16 {
            for input in 0..16 {
                assert_eq!(packed[(k * 16 + out) * 16 + input], ours[input * 16 + out]);
            }
        }
    }
}
