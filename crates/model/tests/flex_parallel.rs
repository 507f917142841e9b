//! Burn's flex backend as Rosetta builds it (`vendor/burn-flex`, patched): element-wise
//! operations on large tensors run on rayon's threads, fills too, and a matrix product's output
//! is not zero-filled before the product writes it (vendor/README.md, the fourth patch). Each
//! test builds tensors above the patch's threshold (128 Ki elements) and checks every element
//! against the same arithmetic done here, element by element, so a part computed twice, skipped
//! or left unwritten fails.

use rosetta_model::burn::tensor::{Device, Tensor, TensorData};

const ROWS: usize = 700;
const COLS: usize = 300;

/// `rows × cols` values from a small linear congruential generator, in `[-4, 4)`.
fn values(rows: usize, cols: usize, seed: u64) -> Vec<f32> {
    let mut state = seed;
    (0..rows * cols)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 8.0
        })
        .collect()
}

fn tensor(values: &[f32], shape: [usize; 2]) -> Tensor<2> {
    Tensor::from_data(TensorData::new(values.to_vec(), shape), &Device::flex())
}

fn host(t: Tensor<2>) -> Vec<f32> {
    t.into_data().try_to_vec::<f32>().expect("f32")
}

fn assert_bits(actual: &[f32], expected: impl Iterator<Item = f32>, what: &str) {
    let expected: Vec<f32> = expected.collect();
    assert_eq!(actual.len(), expected.len(), "{what}: length");
    for (i, (a, e)) in actual.iter().zip(&expected).enumerate() {
        assert_eq!(
            a.to_bits(),
            e.to_bits(),
            "{what}: element {i}: {a} against {e}"
        );
    }
}

#[test]
fn unary_and_scalar_operations_in_place_and_into_new_buffers() {
    let a = values(ROWS, COLS, 1);
    // Unique: computed in place.
    let exp = host(tensor(&a, [ROWS, COLS]).exp());
    assert_bits(&exp, a.iter().map(|x| x.exp()), "exp in place");
    // Shared (the clone keeps the buffer alive): computed into a new buffer.
    let shared = tensor(&a, [ROWS, COLS]);
    let exp = host(shared.clone().exp());
    assert_bits(&exp, a.iter().map(|x| x.exp()), "exp into a new buffer");
    let scaled = host(shared.clone().mul_scalar(1.5));
    assert_bits(
        &scaled,
        a.iter().map(|x| x * 1.5),
        "mul_scalar into a new buffer",
    );
    let scaled = host(shared.mul_scalar(-0.25));
    assert_bits(&scaled, a.iter().map(|x| x * -0.25), "mul_scalar in place");
}

#[test]
fn binary_operations_same_shape_and_broadcast() {
    let a = values(ROWS, COLS, 2);
    let b = values(ROWS, COLS, 3);
    let row = values(1, COLS, 4);
    let column = values(ROWS, 1, 5);
    let pairs = a.iter().zip(&b);
    let sum = host(tensor(&a, [ROWS, COLS]) + tensor(&b, [ROWS, COLS]));
    assert_bits(&sum, pairs.clone().map(|(x, y)| x + y), "add");
    let shared = tensor(&a, [ROWS, COLS]);
    let other = tensor(&b, [ROWS, COLS]);
    let difference = host(shared.clone() - other.clone());
    assert_bits(
        &difference,
        pairs.clone().map(|(x, y)| x - y),
        "sub, both shared",
    );
    // A row broadcast over every row, into the unique left operand.
    let biased = host(tensor(&a, [ROWS, COLS]) + tensor(&row, [1, COLS]));
    assert_bits(
        &biased,
        a.iter().enumerate().map(|(i, x)| x + row[i % COLS]),
        "add a row, in place",
    );
    // A column broadcast, neither operand reusable: a new buffer.
    let scaled = host(shared.clone() * tensor(&column, [ROWS, 1]));
    assert_bits(
        &scaled,
        a.iter().enumerate().map(|(i, x)| x * column[i / COLS]),
        "mul by a column, into a new buffer",
    );
    // A transposed right operand (a strided walk of it), into the unique left operand and,
    // the left one shared, into a new buffer.
    let t = values(COLS, ROWS, 6);
    let expected = || (0..ROWS * COLS).map(|i| a[i] / t[(i % COLS) * ROWS + i / COLS]);
    let quotient = host(tensor(&a, [ROWS, COLS]) / tensor(&t, [COLS, ROWS]).transpose());
    assert_bits(
        &quotient,
        expected(),
        "div by a transposed operand, in place",
    );
    let quotient = host(shared.clone() / tensor(&t, [COLS, ROWS]).transpose());
    assert_bits(
        &quotient,
        expected(),
        "div by a transposed operand, into a new buffer",
    );
    drop(shared);
    drop(other);
}

#[test]
fn large_fills_hold_their_value_everywhere() {
    let device = Device::flex();
    let zeros = host(Tensor::<2>::zeros([ROWS, COLS], &device));
    assert!(zeros.iter().all(|&x| x.to_bits() == 0));
    let ones = host(Tensor::<2>::ones([ROWS, COLS], &device));
    assert!(ones.iter().all(|&x| x == 1.0));
    let full = host(Tensor::<2>::full([ROWS, COLS], -2.5, &device));
    assert!(full.iter().all(|&x| x == -2.5));
}

/// `a [m, k] · b [k, n]`, in `f64`.
fn product(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut out = vec![0.0f64; m * n];
    for i in 0..m {
        for p in 0..k {
            let x = f64::from(a[i * k + p]);
            for j in 0..n {
                out[i * n + j] += x * f64::from(b[p * n + j]);
            }
        }
    }
    out
}

#[test]
fn every_element_of_a_product_is_written() {
    let (m, k, n) = (ROWS, 64, COLS);
    let a = values(m, k, 7);
    let b = values(k, n, 8);
    let expected = product(&a, &b, m, k, n);
    // Buffers of this size freed just before are what the allocator hands out next: were the
    // product to leave any element unwritten, it would show these values.
    drop(host(
        Tensor::<2>::full([m, n], 1.0e30, &Device::flex()).mul_scalar(1.0),
    ));
    let out = host(tensor(&a, [m, k]).matmul(tensor(&b, [k, n])));
    for (i, (x, e)) in out.iter().zip(&expected).enumerate() {
        assert!(
            (f64::from(*x) - e).abs() < 1e-3,
            "element {i}: {x} against {e}"
        );
    }
    // Batched, with an inner length of zero: all zeros.
    let empty_inner = Tensor::<3>::zeros([3, 50, 0], &Device::flex())
        .matmul(Tensor::<3>::zeros([3, 0, 40], &Device::flex()));
    let zeros = empty_inner.into_data().try_to_vec::<f32>().expect("f32");
    assert_eq!(zeros.len(), 3 * 50 * 40);
    assert!(zeros.iter().all(|&x| x.to_bits() == 0));
    // Batched: four products of [64, 80] · [80, 600].
    let (batch, m, k, n) = (4, 64, 80, 600);
    let a = values(batch * m, k, 9);
    let b = values(batch * k, n, 10);
    let out = Tensor::<3>::from_data(TensorData::new(a.clone(), [batch, m, k]), &Device::flex())
        .matmul(Tensor::<3>::from_data(
            TensorData::new(b.clone(), [batch, k, n]),
            &Device::flex(),
        ))
        .into_data()
        .try_to_vec::<f32>()
        .expect("f32");
    for i in 0..batch {
        let expected = product(&a[i * m * k..][..m * k], &b[i * k * n..][..k * n], m, k, n);
        for (j, (x, e)) in out[i * m * n..][..m * n].iter().zip(&expected).enumerate() {
            assert!(
                (f64::from(*x) - e).abs() < 1e-3,
                "batch {i}, element {j}: {x} against {e}"
            );
        }
    }
}
