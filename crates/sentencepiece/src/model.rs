//! A loaded SentencePiece model (`SentencePieceProcessor`): validation as SentencePiece loads
//! a `.spm`, refusal of what this crate does not implement, and encoding (normalise, segment,
//! merge runs of unknown pieces).

use std::collections::HashMap;

use crate::decode;
use crate::error::Error;
use crate::normalizer::Normalizer;
use crate::proto::{DEFAULT_UNK_SURFACE, ModelProto, ModelType, PieceType};
use crate::unigram::{ScoredPiece, Unigram};

/// One encoded piece: its text (for an unknown piece, the normalised text it covers) and id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EncodedPiece {
    /// The piece's text, `▁` for spaces.
    pub piece: String,
    /// Its SentencePiece id.
    pub id: u32,
}

/// A SentencePiece unigram model, ready to encode and decode exactly as SentencePiece 0.2.x.
///
/// Refused (an [`Error::Unsupported`] naming the setting): model types BPE, WORD and CHAR,
/// `byte_fallback = true` and `treat_whitespace_as_suffix = true`.
#[derive(Clone, Debug)]
pub struct SentencePieceModel {
    origin: String,
    proto: ModelProto,
    normalizer: Normalizer,
    denormalizer: Option<Normalizer>,
    unigram: Unigram,
    /// CONTROL, UNKNOWN and BYTE pieces by text (`reserved_id_map_`).
    reserved: HashMap<String, u32>,
    unk_surface: String,
}

fn piece_type(raw: Option<i32>, index: usize, origin: &str) -> Result<PieceType, Error> {
    match raw {
        None => Ok(PieceType::Normal),
        Some(value) => PieceType::try_from(value).map_err(|_| {
            Error::invalid(origin, format!("piece {index} has an unknown type {value}"))
        }),
    }
}

impl SentencePieceModel {
    /// Loads a `.spm` file's bytes; `origin` (e.g. `source.spm`) names it in errors.
    pub fn from_bytes(bytes: &[u8], origin: &str) -> Result<Self, Error> {
        Self::from_proto(ModelProto::from_bytes(bytes, origin)?, origin)
    }

    /// Builds the model from a decoded protobuf; `origin` names it in errors.
    pub fn from_proto(proto: ModelProto, origin: &str) -> Result<Self, Error> {
        let trainer = proto.trainer_spec.clone().unwrap_or_default();
        let model_type = match trainer.model_type {
            None => ModelType::Unigram,
            Some(value) => ModelType::try_from(value)
                .map_err(|_| Error::invalid(origin, format!("unknown model_type {value}")))?,
        };
        let model_name = match model_type {
            ModelType::Unigram => None,
            ModelType::Bpe => Some("BPE"),
            ModelType::Word => Some("WORD"),
            ModelType::Char => Some("CHAR"),
        };
        if let Some(name) = model_name {
            return Err(Error::unsupported(
                origin,
                format!("model_type {name}"),
                "rosetta-sentencepiece implements SentencePiece's unigram models only",
            ));
        }
        if trainer.byte_fallback() {
            return Err(Error::unsupported(
                origin,
                "byte_fallback = true",
                "unknown characters as UTF-8 byte pieces are not implemented",
            ));
        }
        if trainer.treat_whitespace_as_suffix() {
            return Err(Error::unsupported(
                origin,
                "treat_whitespace_as_suffix = true",
                "only the default, a space marker at the start of words, is implemented",
            ));
        }

        // ModelInterface::InitializePieces.
        let mut pieces = Vec::with_capacity(proto.pieces.len());
        let mut reserved = HashMap::new();
        let mut normal = HashMap::new();
        let mut unk_id = None;
        for (index, p) in proto.pieces.iter().enumerate() {
            let text = p.piece.clone().unwrap_or_default();
            let kind = piece_type(p.r#type, index, origin)?;
            let id = u32::try_from(index)
                .map_err(|_| Error::invalid(origin, "more than 2^32 pieces"))?;
            if text.is_empty() {
                return Err(Error::invalid(origin, format!("piece {index} is empty")));
            }
            if text.contains('\0') {
                return Err(Error::invalid(
                    origin,
                    format!("piece {index} ({text:?}) contains a NUL character"),
                ));
            }
            let table = match kind {
                PieceType::Normal | PieceType::UserDefined | PieceType::Unused => &mut normal,
                PieceType::Unknown | PieceType::Control | PieceType::Byte => &mut reserved,
            };
            if table.insert(text.clone(), id).is_some() {
                return Err(Error::invalid(
                    origin,
                    format!("piece {text:?} (id {index}) is already defined"),
                ));
            }
            match kind {
                PieceType::Unknown if unk_id.is_some() => {
                    return Err(Error::invalid(
                        origin,
                        format!("a second unknown piece {text:?} (id {index})"),
                    ));
                }
                PieceType::Unknown => unk_id = Some(id),
                PieceType::Byte => {
                    return Err(Error::invalid(
                        origin,
                        format!(
                            "byte piece {text:?} (id {index}) is found although byte_fallback is false"
                        ),
                    ));
                }
                _ => {}
            }
            pieces.push(ScoredPiece {
                piece: text,
                score: p.score.unwrap_or(0.0),
                kind,
            });
        }
        let Some(unk_id) = unk_id else {
            return Err(Error::invalid(
                origin,
                "no unknown piece (<unk>) is defined",
            ));
        };
        if normal.is_empty() {
            return Err(Error::invalid(origin, "no pieces are loaded"));
        }

        let user_defined: Vec<&str> = pieces
            .iter()
            .filter(|p| p.kind == PieceType::UserDefined)
            .map(|p| p.piece.as_str())
            .collect();
        let normalizer = Normalizer::new(
            &proto.normalizer_spec.clone().unwrap_or_default(),
            &user_defined,
            origin,
        )?;
        let denormalizer = match &proto.denormalizer_spec {
            Some(spec)
                if spec
                    .precompiled_charsmap
                    .as_ref()
                    .is_some_and(|m| !m.is_empty()) =>
            {
                Some(Normalizer::new(spec, &[], origin)?)
            }
            _ => None,
        };
        let unk_surface = trainer
            .unk_surface
            .clone()
            .unwrap_or_else(|| DEFAULT_UNK_SURFACE.to_owned());
        let model = SentencePieceModel {
            origin: origin.to_owned(),
            normalizer,
            denormalizer,
            unigram: Unigram::new(pieces, unk_id),
            reserved,
            unk_surface,
            proto,
        };
        model.self_test()?;
        Ok(model)
    }

    /// SentencePiece runs the model's self-test samples when it loads it and refuses the model
    /// if one does not encode as expected (or to a segmentation of the same score).
    fn self_test(&self) -> Result<(), Error> {
        let Some(data) = &self.proto.self_test_data else {
            return Ok(());
        };
        for (i, sample) in data.samples.iter().enumerate() {
            let input = sample.input.as_deref().unwrap_or_default();
            let expected = sample.expected.as_deref().unwrap_or_default();
            let actual = self.encode_as_pieces(input).join(" ");
            if actual != expected
                && (self.path_score(expected) - self.path_score(&actual)).abs() > 1e-7
            {
                return Err(Error::invalid(
                    &self.origin,
                    format!(
                        "self-test sample {i} ({input:?}) encodes as {actual:?}, not {expected:?}"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// `unigram::Model::VerifyOutputsEquivalent`'s score of space-separated pieces.
    fn path_score(&self, pieces: &str) -> f32 {
        let mut total = 0.0f32;
        for piece in pieces.split(' ') {
            let id = self.piece_to_id(piece);
            if id == self.unk_id() {
                total += self.unigram.unk_score();
            } else {
                total += self.unigram.lattice_score(id, piece.len());
            }
        }
        total
    }

    /// The name the model was loaded under (e.g. `source.spm`).
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The decoded protobuf.
    pub fn proto(&self) -> &ModelProto {
        &self.proto
    }

    /// The normaliser.
    pub fn normalizer(&self) -> &Normalizer {
        &self.normalizer
    }

    /// The denormaliser decoding applies, if the model has one.
    pub(crate) fn denormalizer(&self) -> Option<&Normalizer> {
        self.denormalizer.as_ref()
    }

    /// What `<unk>` decodes to.
    pub fn unk_surface(&self) -> &str {
        &self.unk_surface
    }

    /// The number of pieces (`GetPieceSize`).
    pub fn len(&self) -> usize {
        self.unigram.pieces().len()
    }

    /// Whether the model has no pieces (never true for a loaded model).
    pub fn is_empty(&self) -> bool {
        self.unigram.pieces().is_empty()
    }

    /// The unknown piece's id.
    pub fn unk_id(&self) -> u32 {
        self.unigram.unk_id()
    }

    /// The piece with this id.
    pub fn id_to_piece(&self, id: u32) -> Option<&str> {
        self.unigram
            .pieces()
            .get(id as usize)
            .map(|p| p.piece.as_str())
    }

    /// The kind of the piece with this id.
    pub fn piece_type(&self, id: u32) -> Option<PieceType> {
        self.unigram.pieces().get(id as usize).map(|p| p.kind)
    }

    /// The score of the piece with this id.
    pub fn score(&self, id: u32) -> Option<f32> {
        self.unigram.pieces().get(id as usize).map(|p| p.score)
    }

    /// The id of `piece` (`PieceToId`): CONTROL and UNKNOWN pieces first, then the others;
    /// the unknown id for a string that is no piece.
    pub fn piece_to_id(&self, piece: &str) -> u32 {
        if let Some(&id) = self.reserved.get(piece) {
            return id;
        }
        self.unigram.lookup(piece).unwrap_or(self.unigram.unk_id())
    }

    /// Whether `id` is the unknown piece.
    pub fn is_unknown(&self, id: u32) -> bool {
        self.piece_type(id) == Some(PieceType::Unknown)
    }

    /// Whether `id` is a control piece (`<s>`, `</s>`).
    pub fn is_control(&self, id: u32) -> bool {
        self.piece_type(id) == Some(PieceType::Control)
    }

    /// The text as SentencePiece normalises it before segmentation.
    pub fn normalize(&self, text: &str) -> String {
        self.normalizer.normalize(text)
    }

    /// Encodes `text` (`Encode`): normalise, segment, and merge each run of unknown pieces
    /// into one unknown piece whose text is the normalised text it covers.
    pub fn encode(&self, text: &str) -> Vec<EncodedPiece> {
        let normalized = self.normalizer.normalize(text);
        let mut out: Vec<EncodedPiece> = Vec::new();
        let mut prev_unknown = false;
        for segment in self.unigram.encode(&normalized) {
            let piece = &normalized[segment.start..segment.end];
            let unknown = self.is_unknown(segment.id);
            match out.last_mut() {
                Some(last) if unknown && prev_unknown => last.piece.push_str(piece),
                _ => out.push(EncodedPiece {
                    piece: piece.to_owned(),
                    id: segment.id,
                }),
            }
            prev_unknown = unknown;
        }
        out
    }

    /// The pieces of `text` (`encode(text, out_type=str)`).
    pub fn encode_as_pieces(&self, text: &str) -> Vec<String> {
        self.encode(text).into_iter().map(|p| p.piece).collect()
    }

    /// The ids of `text` (`encode(text, out_type=int)`).
    pub fn encode_as_ids(&self, text: &str) -> Vec<u32> {
        self.encode(text).into_iter().map(|p| p.id).collect()
    }

    /// The text of `pieces` (`decode_pieces`): control pieces vanish, `<unk>` becomes the
    /// unknown surface, another string that is no piece is kept as it is (its `▁` too), `▁`
    /// becomes a space and the first leading space is dropped.
    pub fn decode_pieces<S: AsRef<str>>(&self, pieces: &[S]) -> String {
        decode::decode_pieces(self, pieces)
    }

    /// The text of `ids` (`decode_ids`); an id past the last piece is an error.
    pub fn decode_ids(&self, ids: &[u32]) -> Result<String, Error> {
        let mut pieces = Vec::with_capacity(ids.len());
        for &id in ids {
            let piece = self.id_to_piece(id).ok_or_else(|| Error::IdOutOfRange {
                id,
                detail: format!("{} has {} pieces", self.origin, self.len()),
            })?;
            pieces.push(piece);
        }
        Ok(self.decode_pieces(&pieces))
    }
}
