//! The `tokenizer.json` tokenizer under [`crate::SubwordTokenizer`]: the `tokenizers` crate
//! natively (training, and the canonical JSON), [`crate::byte_level::ByteLevelTokenizer`] in WebAssembly, where
//! the browser only loads and runs a trained one and the `tokenizers` crate, its
//! regular-expression engines and trainers would be a third of the module. Both behave the
//! same on Rosetta's tokenizers (`tests/byte_level.rs` compares them).

#[cfg(target_arch = "wasm32")]
pub(crate) use browser::Trained;
#[cfg(not(target_arch = "wasm32"))]
pub(crate) use native::Trained;

#[cfg(not(target_arch = "wasm32"))]
mod native {
    use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
    use tokenizers::models::bpe::{BPE, BpeTrainerBuilder};
    use tokenizers::models::unigram::{Unigram, UnigramTrainerBuilder};
    use tokenizers::models::{ModelWrapper, TrainerWrapper};
    use tokenizers::normalizers::unicode::NFC;
    use tokenizers::pre_tokenizers::byte_level::ByteLevel;
    use tokenizers::{AddedToken, Tokenizer};

    use crate::error::DataError;
    use crate::tokenizer::{
        SPECIAL_TOKEN_IDS, SPECIAL_TOKEN_NAMES, SubwordModel, TokenizerSettings,
    };

    /// A `tokenizers` tokenizer, boxed: it is large beside a Marian side.
    #[derive(Clone)]
    pub(crate) struct Trained(Box<Tokenizer>);

    fn tokenizer_error(context: impl Into<String>) -> impl FnOnce(tokenizers::Error) -> DataError {
        let context = context.into();
        move |e| DataError::Tokenizer {
            context,
            reason: e.to_string(),
        }
    }

    impl Trained {
        /// Trains one on `texts` with `specials` as its special tokens, in id order.
        pub(crate) fn train<I, S>(
            settings: &TokenizerSettings,
            texts: I,
            specials: &[&str],
        ) -> Result<Self, DataError>
        where
            I: Iterator<Item = S> + Send,
            S: AsRef<str> + Send,
        {
            let specials: Vec<AddedToken> = specials
                .iter()
                .map(|t| AddedToken::from(t.to_string(), true))
                .collect();
            let unk = SPECIAL_TOKEN_NAMES[SPECIAL_TOKEN_IDS.unk as usize].to_string();
            let (model, mut trainer): (ModelWrapper, TrainerWrapper) = match settings.model {
                SubwordModel::Bpe => {
                    let model = BPE::builder()
                        .unk_token(unk)
                        .build()
                        .map_err(tokenizer_error("building BPE"))?;
                    let trainer = BpeTrainerBuilder::new()
                        .vocab_size(settings.vocab_size)
                        .min_frequency(settings.min_frequency)
                        .special_tokens(specials)
                        .initial_alphabet(ByteLevel::alphabet().into_iter().collect())
                        .show_progress(false)
                        .build();
                    (model.into(), trainer.into())
                }
                SubwordModel::Unigram => {
                    let trainer = UnigramTrainerBuilder::default()
                        .vocab_size(settings.vocab_size as u32)
                        .special_tokens(specials)
                        .unk_token(Some(unk))
                        .initial_alphabet(ByteLevel::alphabet())
                        .show_progress(false)
                        .build()
                        .map_err(|e| DataError::Tokenizer {
                            context: "building the Unigram trainer".into(),
                            reason: e.to_string(),
                        })?;
                    (Unigram::default().into(), trainer.into())
                }
            };
            let mut inner = Tokenizer::new(model);
            // Text that spells a special token (`</s>` typed by a user) is text, never the token.
            inner.set_encode_special_tokens(true);
            inner
                .with_normalizer(Some(NFC))
                .map_err(tokenizer_error("setting the normalizer"))?;
            inner.with_pre_tokenizer(Some(ByteLevel::new(false, true, true)));
            inner.with_decoder(Some(ByteLevelDecoder::default()));
            inner
                .train(&mut trainer, texts)
                .map_err(tokenizer_error("training"))?;
            Ok(Self(Box::new(inner)))
        }

        /// Parses `tokenizer.json` text; `origin` names it in errors.
        pub(crate) fn from_json(json: &str, origin: &str) -> Result<Self, DataError> {
            let mut inner: Tokenizer = json
                .parse()
                .map_err(tokenizer_error(format!("loading {origin}")))?;
            // Not part of `tokenizer.json`: set on every load, as at training.
            inner.set_encode_special_tokens(true);
            Ok(Self(Box::new(inner)))
        }

        /// The canonical `tokenizer.json` text (deterministic for a given tokenizer).
        pub(crate) fn to_json(&self) -> Result<String, DataError> {
            self.0
                .to_string(false)
                .map_err(tokenizer_error("serializing"))
        }

        pub(crate) fn vocab_size(&self) -> usize {
            self.0.get_vocab_size(true)
        }

        pub(crate) fn token_to_id(&self, token: &str) -> Option<u32> {
            self.0.token_to_id(token)
        }

        pub(crate) fn id_to_token(&self, id: u32) -> Option<String> {
            self.0.id_to_token(id)
        }

        /// Whether `id` is the special added token `content`.
        pub(crate) fn is_special(&self, id: u32, content: &str) -> bool {
            self.0
                .get_added_tokens_decoder()
                .get(&id)
                .is_some_and(|added| added.special && added.content == content)
        }

        pub(crate) fn encode(&self, text: &str) -> Result<Vec<u32>, DataError> {
            let encoding = self
                .0
                .encode(text, false)
                .map_err(tokenizer_error("encoding"))?;
            Ok(encoding.get_ids().to_vec())
        }

        /// [`encode`](Self::encode) of each text, on every core.
        pub(crate) fn encode_batch(&self, texts: &[String]) -> Result<Vec<Vec<u32>>, DataError> {
            let inputs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let encodings = self
                .0
                .encode_batch(inputs, false)
                .map_err(tokenizer_error("encoding"))?;
            Ok(encodings.iter().map(|e| e.get_ids().to_vec()).collect())
        }

        /// Text of `ids`, special tokens skipped.
        pub(crate) fn decode(&self, ids: &[u32]) -> Result<String, DataError> {
            self.0
                .decode(ids, true)
                .map_err(tokenizer_error("decoding"))
        }
    }
}

#[cfg(target_arch = "wasm32")]
mod browser {
    use std::sync::Arc;

    use crate::byte_level::ByteLevelTokenizer;
    use crate::error::DataError;
    use crate::tokenizer::TokenizerSettings;

    /// A [`ByteLevelTokenizer`] and the JSON text it was read from (its identity and
    /// fingerprint).
    #[derive(Clone)]
    pub(crate) struct Trained {
        tokenizer: Arc<ByteLevelTokenizer>,
        json: Arc<str>,
    }

    impl Trained {
        /// Refused: the browser build loads trained tokenizers, it does not train them.
        pub(crate) fn train<I, S>(
            _settings: &TokenizerSettings,
            _texts: I,
            _specials: &[&str],
        ) -> Result<Self, DataError>
        where
            I: Iterator<Item = S> + Send,
            S: AsRef<str> + Send,
        {
            Err(DataError::Tokenizer {
                context: "training".into(),
                reason: "the WebAssembly build has no tokenizer trainer; train natively".into(),
            })
        }

        /// Parses `tokenizer.json` text; `origin` names it in errors.
        pub(crate) fn from_json(json: &str, origin: &str) -> Result<Self, DataError> {
            Ok(Self {
                tokenizer: Arc::new(ByteLevelTokenizer::from_json(json, origin)?),
                json: json.into(),
            })
        }

        /// The `tokenizer.json` text as read. Rosetta writes the canonical text (the `tokenizers`
        /// crate's), so a bundle's fingerprint matches; a file reformatted by hand does not, and
        /// its bundle is refused as another tokenizer's.
        pub(crate) fn to_json(&self) -> Result<String, DataError> {
            Ok(self.json.to_string())
        }

        pub(crate) fn vocab_size(&self) -> usize {
            self.tokenizer.vocab_size()
        }

        pub(crate) fn token_to_id(&self, token: &str) -> Option<u32> {
            self.tokenizer.token_to_id(token)
        }

        pub(crate) fn id_to_token(&self, id: u32) -> Option<String> {
            self.tokenizer.id_to_token(id)
        }

        /// Whether `id` is the special added token `content`.
        pub(crate) fn is_special(&self, id: u32, content: &str) -> bool {
            self.tokenizer.added_token(id) == Some(content)
        }

        pub(crate) fn encode(&self, text: &str) -> Result<Vec<u32>, DataError> {
            self.tokenizer.encode(text)
        }

        /// [`encode`](Self::encode) of each text (one thread in WebAssembly).
        pub(crate) fn encode_batch(&self, texts: &[String]) -> Result<Vec<Vec<u32>>, DataError> {
            texts.iter().map(|t| self.tokenizer.encode(t)).collect()
        }

        /// Text of `ids`, special tokens skipped.
        pub(crate) fn decode(&self, ids: &[u32]) -> Result<String, DataError> {
            Ok(self.tokenizer.decode(ids))
        }
    }
}
