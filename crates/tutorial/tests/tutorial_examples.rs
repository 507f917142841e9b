//! The numbers behind the tutorial examples (`crates/tutorial/examples/`), checked on the same
//! library functions the examples print.

use rosetta_model::TransformerConfig;
use rosetta_model::burn::tensor::{Device, Tensor, TensorData};
use rosetta_tutorial::attention_weights::attention_weights_demo;
use rosetta_tutorial::feed_forward::feed_forward_demo;
use rosetta_tutorial::masks::{format_mask, masks_demo};
use rosetta_tutorial::multi_head::multi_head_demo;
use rosetta_tutorial::positional::positional_demo;
use rosetta_tutorial::scaling::{TUTORIAL_D_KS, scaling_table, softmax_stats};
use rosetta_tutorial::shapes::{ShapeRow, attention_shape_table, model_shape_table};

#[test]
fn attention_weights_rows_are_distributions_and_masked_entries_are_exactly_zero() {
    let demo = attention_weights_demo(64, 3, 1, 11);
    assert_eq!(demo.weights_shape, [1, 1, 3, 3]);
    assert_eq!(demo.context_shape, [1, 1, 3, 64]);
    for matrix in [
        &demo.weights,
        &demo.padded_weights,
        &demo.look_ahead_weights,
    ] {
        assert_eq!(matrix.len(), 3);
        for row in matrix.iter() {
            let sum: f32 = row.iter().sum();
            assert!((sum - 1.0).abs() < 1e-5, "row {row:?} sums to {sum}");
        }
    }
    // Q = K: each position's largest weight is on itself.
    for (i, row) in demo.weights.iter().enumerate() {
        let argmax = (0..3).max_by(|&a, &b| row[a].total_cmp(&row[b]));
        assert_eq!(argmax, Some(i), "row {i}: {row:?}");
    }
    assert_eq!(demo.padding, vec![false, false, true]);
    for row in &demo.padded_weights {
        assert_eq!(row[2], 0.0, "padding key must get exactly zero: {row:?}");
    }
    for (i, row) in demo.look_ahead_weights.iter().enumerate() {
        for (j, w) in row.iter().enumerate().filter(|(j, _)| *j > i) {
            assert_eq!(*w, 0.0, "query {i} must not see key {j}");
        }
        assert!(row[..=i].iter().all(|w| *w > 0.0));
    }
    assert_eq!(demo.look_ahead_weights[0], vec![1.0, 0.0, 0.0]);
}

#[test]
fn softmax_gradient_by_autodiff_equals_the_closed_form() {
    // Jᵀ g = w ⊙ (g − ⟨w, g⟩) for one row z = [1, 2, 0.5], g = [0.3, −1, 2].
    let device = Device::flex().autodiff();
    let z = [1.0f64, 2.0, 0.5];
    let g = [0.3f64, -1.0, 2.0];
    let stats = softmax_stats(
        Tensor::<2>::from_data(TensorData::from([[1.0f32, 2.0, 0.5]]), &device),
        Tensor::<2>::from_data(TensorData::from([[0.3f32, -1.0, 2.0]]), &device),
    );
    let exps: Vec<f64> = z.iter().map(|v| v.exp()).collect();
    let total: f64 = exps.iter().sum();
    let w: Vec<f64> = exps.iter().map(|e| e / total).collect();
    let wg: f64 = w.iter().zip(&g).map(|(a, b)| a * b).sum();
    let norm = w
        .iter()
        .zip(&g)
        .map(|(wi, gi)| (wi * (gi - wg)).powi(2))
        .sum::<f64>()
        .sqrt();
    let max = w.iter().copied().fold(0.0, f64::max);
    assert!((stats.mean_max_weight - max).abs() < 1e-6);
    assert!(
        (stats.mean_gradient_norm - norm).abs() < 1e-6,
        "{} vs {norm}",
        stats.mean_gradient_norm
    );
}

#[test]
fn scaling_keeps_the_softmax_from_saturating() {
    let table = scaling_table(&TUTORIAL_D_KS, 1000, 16, 5);
    assert_eq!(
        table.iter().map(|r| r.d_k).collect::<Vec<_>>(),
        TUTORIAL_D_KS
    );
    // Unscaled: the largest weight rises towards 1 and the gradient through the softmax
    // shrinks, strictly, with d_k.
    for pair in table.windows(2) {
        assert!(
            pair[1].max_weight_unscaled > pair[0].max_weight_unscaled,
            "{pair:?}"
        );
        assert!(
            pair[1].grad_norm_unscaled < pair[0].grad_norm_unscaled,
            "{pair:?}"
        );
    }
    let last = table[table.len() - 1];
    assert!(last.max_weight_unscaled > 0.9, "{last:?}");
    assert!(
        last.grad_norm_unscaled < 0.3 * last.grad_norm_scaled,
        "{last:?}"
    );
    // Scaled: the scores have unit variance at every d_k, so the rows differ only by sampling
    // noise (standard error about 0.004 for the weight with 1000 rows) and the slight
    // non-normality of a dot product of 8 terms. A band of 0.03 is several standard errors wide,
    // yet far below the unscaled spread (0.57 to 0.95).
    let band = |pick: fn(&rosetta_tutorial::scaling::ScalingRow) -> f64| {
        let values: Vec<f64> = table.iter().map(pick).collect();
        let max = values.iter().copied().fold(f64::MIN, f64::max);
        let min = values.iter().copied().fold(f64::MAX, f64::min);
        (min, max)
    };
    let (low, high) = band(|r| r.max_weight_scaled);
    assert!(high - low < 0.03, "scaled max weight spans {low}..{high}");
    // 16 keys of unit-variance scores: about a quarter of the mass on the largest.
    assert!((0.15..0.35).contains(&low), "{low}");
    let (low, high) = band(|r| r.grad_norm_scaled);
    assert!(
        high - low < 0.03,
        "scaled gradient norm spans {low}..{high}"
    );
}

#[test]
fn multi_head_parameter_count_does_not_depend_on_the_heads() {
    let rows = multi_head_demo(&[(512, 1), (512, 8), (128, 8)], 2, 5, 3);
    assert_eq!(rows[0].params, 1_050_624);
    assert_eq!(rows[1].params, 1_050_624);
    assert_eq!(rows[0].closed_form, 1_050_624);
    assert_eq!((rows[0].d_k, rows[1].d_k), (512, 64));
    assert_eq!(rows[1].output_shape, [2, 5, 512]);
    assert_eq!(rows[1].weights_shape, [2, 8, 5, 5]);
    assert_eq!(rows[0].weights_shape, [2, 1, 5, 5]);
    // The second tutorial's layer: d_model 128, 8 heads, input (2, 5, 128).
    assert_eq!(rows[2].output_shape, [2, 5, 128]);
    assert_eq!(rows[2].params, 4 * (128 * 128 + 128));
}

#[test]
fn positional_values_match_the_closed_form_at_positions_0_5_10() {
    let demo = positional_demo(20, 64, &[0, 5, 10], 8);
    assert_eq!(demo.shape, [20, 64]);
    assert_eq!(
        demo.shown.iter().map(|(p, _)| *p).collect::<Vec<_>>(),
        vec![0, 5, 10]
    );
    for (pos, first) in &demo.shown {
        assert_eq!(first.len(), 8);
        for (dim, got) in first.iter().enumerate() {
            let angle = *pos as f64 / 10_000f64.powf((dim / 2 * 2) as f64 / 64.0);
            let want = if dim % 2 == 0 {
                angle.sin()
            } else {
                angle.cos()
            };
            assert!(
                (*got as f64 - want).abs() < 1e-6,
                "pos {pos} dim {dim}: {got} vs {want}"
            );
        }
    }
    // Position 5, dimension 0: sin(5) = -0.959 (the printed value).
    assert!((demo.shown[1].1[0] - (-0.958_924_3)).abs() < 1e-6);
}

#[test]
fn feed_forward_expands_four_times_and_has_2_099_712_parameters() {
    let demo = feed_forward_demo(512, 2048, 2, 10, 1);
    assert_eq!(demo.params, 2_099_712);
    assert_eq!(demo.closed_form, 2_099_712);
    assert_eq!(demo.expansion, 4.0);
    assert_eq!(demo.input_shape, [2, 10, 512]);
    assert_eq!(demo.hidden_shape, [2, 10, 2048]);
    assert_eq!(demo.output_shape, [2, 10, 512]);
}

fn shapes(rows: &[ShapeRow]) -> Vec<(&str, Vec<usize>)> {
    rows.iter()
        .map(|r| (r.stage.as_str(), r.shape.clone()))
        .collect()
}

#[test]
fn attention_shape_table_is_the_tutorials() {
    let rows = attention_shape_table(2, 4, 512, 2);
    assert_eq!(
        shapes(&rows),
        vec![
            ("Q, K, V", vec![2, 4, 512]),
            ("Kᵀ", vec![2, 512, 4]),
            ("Q·Kᵀ", vec![2, 4, 4]),
            ("scores", vec![2, 4, 4]),
            ("p_attn", vec![2, 4, 4]),
            ("output", vec![2, 4, 512]),
        ]
    );
    // The second tutorial's (2, 3, 4) example: weights (2, 3, 3), output (2, 3, 4).
    let small = attention_shape_table(2, 3, 4, 2);
    let small = shapes(&small);
    assert_eq!(small[4], ("p_attn", vec![2, 3, 3]));
    assert_eq!(small[5], ("output", vec![2, 3, 4]));
}

#[test]
fn model_shape_table_through_every_stage() {
    let config = TransformerConfig::new(50, 60)
        .with_n_encoder_layers(2)
        .with_n_decoder_layers(2);
    let rows = model_shape_table(&config, 2, 4, 4).expect("valid configuration");
    assert_eq!(
        shapes(&rows),
        vec![
            ("source tokens", vec![2, 4]),
            ("target tokens", vec![2, 4]),
            ("source embedding", vec![2, 4, 512]),
            ("+ positional encoding", vec![2, 4, 512]),
            ("source padding mask", vec![2, 1, 1, 4]),
            ("encoder self-attention weights", vec![2, 8, 4, 4]),
            ("encoder layer output", vec![2, 4, 512]),
            ("encoder memory", vec![2, 4, 512]),
            ("look-ahead mask", vec![2, 1, 4, 4]),
            ("cross-attention weights", vec![2, 8, 4, 4]),
            ("decoder layer output", vec![2, 4, 512]),
            ("decoder output", vec![2, 4, 512]),
            ("logits", vec![2, 4, 60]),
        ]
    );
    assert!(
        model_shape_table(&TransformerConfig::new(50, 60).with_n_heads(7), 2, 4, 4).is_err(),
        "an invalid configuration is reported, not built"
    );
}

#[test]
fn masks_block_padding_and_the_future() {
    let demo = masks_demo(&[[7, 6, 0, 0], [1, 2, 3, 4]], 0);
    assert_eq!(
        demo.padding,
        vec![
            vec![false, false, true, true],
            vec![false, false, false, false]
        ]
    );
    for (i, row) in demo.look_ahead.iter().enumerate() {
        for (j, blocked) in row.iter().enumerate() {
            assert_eq!(*blocked, j > i, "query {i} key {j}");
        }
    }
    for (b, combined) in demo.combined.iter().enumerate() {
        for (i, row) in combined.iter().enumerate() {
            for (j, blocked) in row.iter().enumerate() {
                assert_eq!(*blocked, j > i || demo.padding[b][j], "seq {b} q {i} k {j}");
            }
        }
    }
    assert_eq!(format_mask(&demo.padding), "[0 0 1 1]\n[0 0 0 0]");
}

mod plots {
    use std::fs::File;
    use std::path::Path;

    use rosetta_tutorial::plot::{Panel, PlotError, Series, line_chart_png};
    use rosetta_tutorial::{positional, scaling};

    /// Decodes the PNG at `path`: its size and how many pixels are not white.
    fn decode(path: &Path) -> (u32, u32, usize) {
        let file = File::open(path).expect("the PNG exists");
        let mut reader = png::Decoder::new(std::io::BufReader::new(file))
            .read_info()
            .expect("a PNG header");
        let mut pixels = vec![0; reader.output_buffer_size().expect("buffer size")];
        let frame = reader.next_frame(&mut pixels).expect("one frame");
        assert_eq!(frame.color_type, png::ColorType::Rgb);
        let drawn = pixels[..frame.buffer_size()]
            .chunks(3)
            .filter(|p| p != &[255, 255, 255])
            .count();
        (frame.width, frame.height, drawn)
    }

    #[test]
    fn scaling_plot_and_positional_heatmap_are_valid_pngs() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let table = scaling::scaling_table(&scaling::TUTORIAL_D_KS, 200, 16, 1);
        let plot = dir.path().join("scaling.png");
        scaling::write_plot(&table, &plot).expect("scaling plot");
        let (w, h, drawn) = decode(&plot);
        assert_eq!((w, h), (1200, 500));
        assert!(drawn > 5000, "{drawn} drawn pixels");

        let heatmap = dir.path().join("positional_encoding.png");
        positional::write_heatmap(100, 128, &heatmap).expect("heatmap");
        let (w, h, drawn) = decode(&heatmap);
        assert_eq!((w, h), (900, 700));
        // The 100 x 128 cells cover most of the image.
        assert!(drawn > 900 * 700 / 2, "{drawn} drawn pixels");
    }

    #[test]
    fn bad_data_and_unwritable_paths_are_errors_not_panics() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let panel = |points: Vec<(f64, f64)>| Panel {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            log_x: true,
            series: vec![Series {
                label: "s".into(),
                points,
            }],
        };
        let path = dir.path().join("bad.png");
        assert!(matches!(
            line_chart_png(&path, &[panel(vec![(0.0, 1.0), (1.0, 2.0)])], (300, 200)),
            Err(PlotError::Data { .. })
        ));
        assert!(matches!(
            line_chart_png(&path, &[panel(vec![(1.0, f64::NAN)])], (300, 200)),
            Err(PlotError::Data { .. })
        ));
        let missing = dir.path().join("no-such-dir").join("x.png");
        assert!(matches!(
            line_chart_png(&missing, &[panel(vec![(1.0, 1.0), (2.0, 3.0)])], (300, 200)),
            Err(PlotError::Io { .. })
        ));
        assert!(!path.exists());
    }
}
