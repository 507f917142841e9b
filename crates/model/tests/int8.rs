//! A model quantized to int8 (`Transformer::quantize_int8`): its incremental steps equal its
//! full pass (the same products on the same rows), its logits stay within the quantization's
//! rounding of the float model's, and nothing changes where int8 does not run.

use rosetta_model::burn::tensor::{Device, Int, Tensor, TensorData, Tolerance};
use rosetta_model::{Transformer, TransformerConfig};

fn tokens(rows: &[&[i64]], device: &Device) -> Tensor<2, Int> {
    let flat: Vec<i64> = rows.iter().flat_map(|r| r.iter().copied()).collect();
    Tensor::from_data(TensorData::new(flat, [rows.len(), rows[0].len()]), device)
}

/// d_model 64 (a multiple of the AMX kernel's 64-byte steps) and a vocabulary of 300 (odd
/// panels), tied or not.
fn model(tied: bool, device: &Device) -> Transformer {
    device.seed(21);
    TransformerConfig::new(300, 300)
        .with_d_model(64)
        .with_n_heads(4)
        .with_d_ff(128)
        .with_n_encoder_layers(2)
        .with_n_decoder_layers(2)
        .with_dropout(0.0)
        .with_attention_dropout(0.0)
        .with_max_positions(32)
        .with_share_embeddings(tied)
        .with_tie_output_projection(tied)
        .init(device)
        .expect("valid")
}

fn values(t: Tensor<2>) -> Vec<f32> {
    t.into_data()
        .convert::<f32>()
        .try_to_vec::<f32>()
        .expect("f32")
}

/// 40 rows (AMX blocks and the VNNI kernel's rest, where the CPU has them) of 6 positions.
fn batch(device: &Device) -> (Tensor<2, Int>, Tensor<2, Int>) {
    let sources: Vec<Vec<i64>> = (0..40)
        .map(|r| vec![4 + r, 50 + 2 * r, 7 + (r * 13) % 280, 3])
        .collect();
    let targets: Vec<Vec<i64>> = (0..40)
        .map(|r| vec![2, 9 + r, 100 + r, 11, 200 + (r * 7) % 90, 12])
        .collect();
    let rows = |v: &[Vec<i64>]| tokens(&v.iter().map(Vec::as_slice).collect::<Vec<_>>(), device);
    (rows(&sources), rows(&targets))
}

#[test]
fn int8_steps_equal_the_int8_full_pass() {
    let device = Device::flex();
    for tied in [true, false] {
        let mut model = model(tied, &device);
        model.quantize_int8();
        let (source, target) = batch(&device);
        let encoded = model.encode(source);
        let full = model.decode(target.clone(), &encoded);
        let mut state = model.start_decoding(&encoded);
        for t in 0..6 {
            let step = model.decode_step(target.clone().slice([0..40, t..t + 1]), &mut state);
            let expected = full
                .clone()
                .slice([0..40, t..t + 1, 0..300])
                .reshape([40, 300]);
            // The same rows through the same integer products; the attention differs in
            // summation order only.
            step.into_data()
                .assert_approx_eq::<f32>(&expected.into_data(), Tolerance::absolute(1e-4));
        }
    }
}

#[test]
fn int8_logits_are_close_to_the_float_ones() {
    let device = Device::flex();
    for tied in [true, false] {
        let float = model(tied, &device);
        let mut int8 = float.clone();
        int8.quantize_int8();
        assert!(int8.int8_size_bytes() > 0);
        assert_eq!(float.int8_size_bytes(), 0);
        let (source, target) = batch(&device);
        let logits = |m: &Transformer| {
            let [batch, len] = target.dims();
            values(
                m.forward(source.clone(), target.clone())
                    .reshape([batch * len, 300]),
            )
        };
        let (a, b) = (logits(&float), logits(&int8));
        let range = a.iter().fold(0.0f32, |m, x| m.max(x.abs()));
        let worst = a
            .iter()
            .zip(&b)
            .fold(0.0f32, |m, (x, y)| m.max((x - y).abs()));
        // 8-bit weights and inputs through 2 + 2 layers: a few per cent of the logits' range,
        // and not nothing (the products really ran in int8).
        assert!(worst < 0.05 * range, "worst {worst} of {range}");
        assert!(worst > 0.0, "int8 logits equal to float");
        // Most rows keep their best token.
        let rows = a.len() / 300;
        let argmax = |v: &[f32]| {
            v.iter()
                .enumerate()
                .fold(
                    (0, f32::MIN),
                    |best, (i, &x)| if x > best.1 { (i, x) } else { best },
                )
                .0
        };
        let same = (0..rows)
            .filter(|&r| argmax(&a[r * 300..(r + 1) * 300]) == argmax(&b[r * 300..(r + 1) * 300]))
            .count();
        assert!(
            same * 10 >= rows * 9,
            "{same} of {rows} rows keep their best token"
        );
    }
}

#[test]
fn int8_does_not_run_while_recording_gradients() {
    let device = Device::flex().autodiff();
    assert!(!rosetta_model::int8::runs_on(&device));
    assert!(rosetta_model::int8::runs_on(&Device::flex()));
    let float = model(true, &device);
    let mut int8 = float.clone();
    int8.quantize_int8();
    let (source, target) = batch(&device);
    let a = float.forward(source.clone(), target.clone());
    let b = int8.forward(source, target);
    assert_eq!(a.into_data(), b.into_data());
}

#[test]
fn quantization_names_parse_and_print() {
    use rosetta_model::Quantization;
    for name in Quantization::NAMES {
        let q: Quantization = name.parse().expect("a name");
        assert_eq!(q.to_string(), name);
    }
    let err = "int4".parse::<Quantization>().expect_err("not a name");
    assert!(err.contains("float32 or int8"), "{err}");
}
