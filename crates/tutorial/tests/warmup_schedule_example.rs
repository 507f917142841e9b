//! Runs the `warmup_schedule` example's logic end to end into a temporary directory and checks
//! the PNG it writes.

#[allow(dead_code)]
#[path = "../examples/warmup_schedule.rs"]
mod example;

use std::fs::File;

#[test]
fn example_writes_a_decodable_png() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = example::run(dir.path()).expect("the example runs");
    assert_eq!(path, dir.path().join("warmup_schedule.png"));
    let decoder = png::Decoder::new(std::io::BufReader::new(
        File::open(&path).expect("the PNG exists"),
    ));
    let mut reader = decoder.read_info().expect("a PNG header");
    let info = reader.info();
    assert_eq!((info.width, info.height), (900, 500));
    let mut pixels = vec![0; reader.output_buffer_size().expect("buffer size")];
    let frame = reader.next_frame(&mut pixels).expect("one frame");
    let pixels = &pixels[..frame.buffer_size()];
    // Not a blank canvas: the curves and the axes put non-white pixels in it.
    let drawn = pixels.chunks(3).filter(|p| p != &[255, 255, 255]).count();
    assert!(drawn > 1000, "only {drawn} non-white pixels");
}
