//! TensorBoard event files: the records of `metrics.jsonl` also written as scalar summaries in
//! TensorBoard's format, into `RUN/tensorboard/` when `training.tensorboard = true`, so that
//! `tensorboard --logdir runs/` shows Rosetta runs beside those of other tools.
//!
//! An event file is a TFRecord file: each record is its length (u64, little-endian), the masked
//! CRC-32C of those 8 bytes, the data, and the masked CRC-32C of the data; the data is an
//! `Event` protocol buffer (TensorBoard's `event.proto`), encoded with `prost`. The first event
//! names the file version; each later one holds a `Summary` of `(tag, simple_value)` pairs at a
//! step. Each session of a run writes a new file (TensorBoard reads every file of a directory).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use prost::Message;

use crate::error::TrainError;
use crate::run_log::MetricsRecord;

/// The subdirectory of a run that holds its event files.
pub const TENSORBOARD_DIR: &str = "tensorboard";

/// TensorBoard's `Event` message (the fields Rosetta writes).
#[derive(Clone, PartialEq, Message)]
pub struct Event {
    /// Seconds since the Unix epoch.
    #[prost(double, tag = "1")]
    pub wall_time: f64,
    /// The training step.
    #[prost(int64, tag = "2")]
    pub step: i64,
    /// `file_version` of the `what` one-of: in the first event of a file.
    #[prost(string, optional, tag = "3")]
    pub file_version: Option<String>,
    /// `summary` of the `what` one-of: the scalars.
    #[prost(message, optional, tag = "5")]
    pub summary: Option<Summary>,
}

/// TensorBoard's `Summary` message.
#[derive(Clone, PartialEq, Message)]
pub struct Summary {
    /// The values.
    #[prost(message, repeated, tag = "1")]
    pub value: Vec<SummaryValue>,
}

/// TensorBoard's `Summary.Value` message (a scalar).
#[derive(Clone, PartialEq, Message)]
pub struct SummaryValue {
    /// The chart the value belongs to (`train/loss`, ...).
    #[prost(string, tag = "1")]
    pub tag: String,
    /// `simple_value` of the `value` one-of.
    #[prost(float, optional, tag = "2")]
    pub simple_value: Option<f32>,
}

/// The CRC-32C of `data`, masked as TFRecord files store it.
pub fn masked_crc32c(data: &[u8]) -> u32 {
    let crc = crc32c::crc32c(data);
    crc.rotate_right(15).wrapping_add(0xa282_ead8)
}

/// `data` framed as one TFRecord record.
pub fn tfrecord(data: &[u8]) -> Vec<u8> {
    let length = (data.len() as u64).to_le_bytes();
    let mut record = Vec::with_capacity(data.len() + 16);
    record.extend_from_slice(&length);
    record.extend_from_slice(&masked_crc32c(&length).to_le_bytes());
    record.extend_from_slice(data);
    record.extend_from_slice(&masked_crc32c(data).to_le_bytes());
    record
}

/// The scalars of a metrics record, tagged as TensorBoard groups them (`train/…`, `valid/…`;
/// a multilingual run's validation adds each direction's loss and BLEU as `valid/en-de/loss`),
/// with the step.
pub fn scalars(record: &MetricsRecord) -> (u64, Vec<(String, f64)>) {
    let tagged = |values: Vec<(&str, f64)>| {
        values
            .into_iter()
            .map(|(tag, value)| (tag.to_string(), value))
            .collect::<Vec<_>>()
    };
    match record {
        MetricsRecord::Train {
            step,
            loss,
            perplexity,
            accuracy,
            learning_rate,
            grad_norm,
            target_tokens_per_second,
            ..
        } => (
            *step,
            tagged(vec![
                ("train/loss", *loss),
                ("train/perplexity", *perplexity),
                ("train/accuracy", *accuracy),
                ("train/learning_rate", *learning_rate),
                ("train/grad_norm", *grad_norm),
                ("train/target_tokens_per_second", *target_tokens_per_second),
            ]),
        ),
        MetricsRecord::Valid {
            step,
            loss,
            perplexity,
            accuracy,
            bleu,
            directions,
            directions_bleu,
            ..
        } => {
            let mut values = tagged(vec![
                ("valid/loss", *loss),
                ("valid/perplexity", *perplexity),
                ("valid/accuracy", *accuracy),
            ]);
            if let Some(bleu) = bleu {
                values.push(("valid/bleu".into(), *bleu));
            }
            for (direction, loss) in directions {
                values.push((format!("valid/{direction}/loss"), *loss));
            }
            for (direction, bleu) in directions_bleu {
                values.push((format!("valid/{direction}/bleu"), *bleu));
            }
            (*step, values)
        }
    }
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// One event file of a session, written record by record.
pub struct EventWriter {
    file: File,
    path: PathBuf,
}

impl EventWriter {
    /// Creates a new event file in `RUN/tensorboard/` and writes its version event.
    pub fn create(run_dir: &Path) -> Result<Self, TrainError> {
        let dir = run_dir.join(TENSORBOARD_DIR);
        std::fs::create_dir_all(&dir).map_err(TrainError::io(&dir))?;
        let wall_time = now();
        // TensorBoard's own naming: `events.out.tfevents.<seconds>.<host>`; the process id
        // keeps two sessions started in the same second apart.
        let path = dir.join(format!(
            "events.out.tfevents.{}.rosetta.{}",
            wall_time as u64,
            std::process::id()
        ));
        let file = OpenOptions::new()
            .create_new(true)
            .write(true)
            .open(&path)
            .map_err(TrainError::io(&path))?;
        let mut writer = Self { file, path };
        writer.write(&Event {
            wall_time,
            step: 0,
            file_version: Some("brain.Event:2".into()),
            summary: None,
        })?;
        Ok(writer)
    }

    /// The event file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends the scalars of `record` as one event.
    pub fn record(&mut self, record: &MetricsRecord) -> Result<(), TrainError> {
        let (step, values) = scalars(record);
        self.write(&Event {
            wall_time: now(),
            step: step as i64,
            file_version: None,
            summary: Some(Summary {
                value: values
                    .into_iter()
                    .map(|(tag, value)| SummaryValue {
                        tag,
                        simple_value: Some(value as f32),
                    })
                    .collect(),
            }),
        })
    }

    /// One record, in one write (a kill leaves at worst a short last record, which
    /// TensorBoard skips).
    fn write(&mut self, event: &Event) -> Result<(), TrainError> {
        self.file
            .write_all(&tfrecord(&event.encode_to_vec()))
            .map_err(TrainError::io(&self.path))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::{MetricsRecord, masked_crc32c, scalars, tfrecord};

    #[test]
    fn a_multilingual_validation_has_a_loss_and_bleu_per_direction() {
        let directions = BTreeMap::from([("en-de".to_string(), 2.5), ("en-fr".to_string(), 1.5)]);
        let record = MetricsRecord::Valid {
            step: 400,
            epoch: 1,
            loss: 2.0,
            perplexity: 2f64.exp(),
            accuracy: 0.5,
            bleu: Some(30.0),
            best: true,
            seconds: None,
            directions,
            directions_bleu: BTreeMap::from([
                ("en-de".to_string(), 25.0),
                ("en-fr".to_string(), 35.0),
            ]),
        };
        let (step, values) = scalars(&record);
        assert_eq!(step, 400);
        let tags: Vec<(&str, f64)> = values.iter().map(|(t, v)| (t.as_str(), *v)).collect();
        assert_eq!(
            tags,
            [
                ("valid/loss", 2.0),
                ("valid/perplexity", 2f64.exp()),
                ("valid/accuracy", 0.5),
                ("valid/bleu", 30.0),
                ("valid/en-de/loss", 2.5),
                ("valid/en-fr/loss", 1.5),
                ("valid/en-de/bleu", 25.0),
                ("valid/en-fr/bleu", 35.0),
            ]
        );
    }

    #[test]
    fn the_masked_crc_is_tfrecords() {
        // CRC-32C("123456789") is 0xE3069283 (the standard check value); masked as TFRecord
        // does, ((crc >> 15) | (crc << 17)) + 0xa282ead8: 0xC78AB0E5 (computed in Python).
        assert_eq!(crc32c::crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(masked_crc32c(b"123456789"), 0xc78a_b0e5);
    }

    #[test]
    fn a_record_is_length_crc_data_crc() {
        let record = tfrecord(b"twelve bytes");
        assert_eq!(record.len(), 8 + 4 + 12 + 4);
        assert_eq!(&record[..8], &12u64.to_le_bytes());
        // The masked CRC-32C of the 8 length bytes (computed in Python).
        assert_eq!(&record[8..12], &0x0afe_c8f4u32.to_le_bytes());
        assert_eq!(&record[12..24], b"twelve bytes");
        assert_eq!(&record[24..], &masked_crc32c(b"twelve bytes").to_le_bytes());
    }
}
