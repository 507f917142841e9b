#!/usr/bin/env python3
"""A cached PyTorch decoder for models `rosetta export --format safetensors` wrote: the anchor
of Rosetta's decoding benchmark (`scripts/bench_decode_systems.sh`).

    python3 scripts/torch_decode.py EXPORT_DIR [--beam 5] [--alpha 0.6] [--length-norm gnmt]
        [--beam-stop bound] [--batch-size 64] [--threads 2] < source.txt > translations.txt
    python3 scripts/torch_decode.py EXPORT_DIR --check N < source.txt
    python3 scripts/torch_decode.py EXPORT_DIR --bench [--beams 1,5] [--batch-sizes 1,64]
        [--batch1-limit 100] < source.txt

EXPORT_DIR holds `model.safetensors` (exported with `--transformer-prefix ""`), `model.json`
and the tokenizer(s). The model is `rosetta_torch.Seq2Seq`, PyTorch's own layers; decoding is
incremental, as fairseq and OpenNMT-py decode: each decoder layer keeps the keys and values of
its self-attention (reordered by beam parent at each step, grown by one position), the
cross-attention's keys and values are computed once per sentence, and finished sentences leave
the batch. Greedy and beam search follow `rosetta translate`'s rules
(crates/model/src/search.rs): the same length limit `min(floor(a * s + b), max_positions - 1)`
(EOS forced there), the padding token never produced, 2k candidates per step with the EOS ones
among the first k finished, GNMT or power length penalty, bound or count stop. Not here:
n-best lists (the best hypothesis only), and the order
of exactly equal candidates (Rosetta takes the lower index; `torch.topk` does not promise one).

`--min-len N` forbids EOS before N tokens, as Rosetta's `SearchConfig::min_len` (default 0:
off, the outputs of `rosetta translate`); `scripts/bench_decode_anchor.py` uses it with
`--max-len-a 0 --max-len-b 20 --min-len 20` to force every output to 20 tokens.

`--check N` decodes the first N sentences with the cache and again by re-running
`nn.TransformerDecoder` over the whole prefix at every step (no cache), greedy and beam, and
fails unless the tokens are the same. `--bench` prints the table of `rosetta bench-decode` (each
search and batch size over the file, sentences sorted by length, target tokens counted with
their EOS, tokenization outside the clock) with this process's peak resident memory.

PyTorch settings (printed to stderr at start, or in the `--bench` header), as PyTorch's CPU
performance tuning guide recommends for inference: every decoding call runs under
`torch.inference_mode()` (no autograd recording, no version counters; stronger than
`no_grad`); `torch.set_num_threads(--threads)` (default: the machine's cores), one thread per
physical core; `torch.set_num_interop_threads(1)` (eager decoding runs no inter-op parallel
work, so a second pool would only hold idle threads); dropout off (`model.eval()`). Not
applied: `torch.compile`/TorchScript (this is the eager anchor), another allocator
(jemalloc/tcmalloc through LD_PRELOAD) and thread pinning (OMP/GOMP affinity variables),
which the guide also lists: set them in the environment to try them.
Needs `pip install torch safetensors tokenizers`.
"""

import argparse
import json
import math
import os
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from safetensors.torch import load_file  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

from rosetta_torch import Seq2Seq  # noqa: E402

BOS, EOS = 2, 3  # Rosetta's special ids (crates/data/src/tokenizer.rs); PAD is the model's


def load(export_dir: str):
    """The exported model in inference mode, and its source and target tokenizers."""
    with open(os.path.join(export_dir, "model.json")) as f:
        config = json.load(f)
    model = Seq2Seq(config)
    state = load_file(os.path.join(export_dir, "model.safetensors"))
    model.load_state_dict(state, strict=True)
    joint = os.path.join(export_dir, "tokenizer.json")
    if os.path.exists(joint):
        source = target = Tokenizer.from_file(joint)
    else:
        source = Tokenizer.from_file(os.path.join(export_dir, "tokenizer.source.json"))
        target = Tokenizer.from_file(os.path.join(export_dir, "tokenizer.target.json"))
    return model.eval(), source, target


class Search:
    """Rosetta's search settings (`SearchConfig`)."""

    def __init__(self, beam=5, alpha=0.6, length_norm="gnmt", stop="bound", max_len_a=1.5,
                 max_len_b=10, min_len=0):
        self.beam, self.alpha, self.length_norm, self.stop = beam, alpha, length_norm, stop
        self.max_len_a, self.max_len_b = max_len_a, max_len_b
        # EOS forbidden while fewer than min_len tokens were produced (Rosetta's min_len).
        self.min_len = min_len

    def penalty(self, length: int) -> float:
        """lp(len), len counting the EOS."""
        if self.length_norm == "gnmt":
            return ((5.0 + length) / 6.0) ** self.alpha
        return float(length) ** self.alpha

    def score(self, log_prob: float, n_tokens: int) -> float:
        return log_prob / self.penalty(n_tokens + 1)

    def best_final_score(self, log_prob: float, n_tokens: int, max_len: int) -> float:
        lp = max(self.penalty(n_tokens + 1), self.penalty(max(max_len, n_tokens) + 1))
        return min(log_prob, 0.0) / lp

    def max_len(self, source_len: int, max_positions: int) -> int:
        wanted = math.floor(self.max_len_a * source_len) + self.max_len_b
        return max(0, min(wanted, max_positions - 1))


class CachedDecoder:
    """Incremental decoding over `model.decoder`'s layers (post- or pre-norm), rows = beams."""

    def __init__(self, model: Seq2Seq, memory: torch.Tensor, memory_pad: torch.Tensor):
        self.model = model
        self.layers = list(model.decoder.layers)
        self.heads = self.layers[0].self_attn.num_heads
        self.norm_first = self.layers[0].norm_first
        # Cross-attention keys and values of every layer, once: [rows, heads, src, d_head].
        self.cross = []
        for layer in self.layers:
            attn = layer.multihead_attn
            d = attn.embed_dim
            w, b = attn.in_proj_weight, attn.in_proj_bias
            k = F.linear(memory, w[d:2 * d], b[d:2 * d])
            v = F.linear(memory, w[2 * d:], b[2 * d:])
            self.cross.append((self.split(k), self.split(v)))
        # Additive mask over the source's padding: [rows, 1, 1, src].
        self.cross_mask = torch.zeros(memory_pad.shape, dtype=memory.dtype)
        self.cross_mask = self.cross_mask.masked_fill(memory_pad, float("-inf"))[:, None, None, :]
        self.self_cache = [None] * len(self.layers)
        self.position = 0

    def split(self, x: torch.Tensor) -> torch.Tensor:
        rows, n, d = x.shape
        return x.view(rows, n, self.heads, d // self.heads).transpose(1, 2)

    def merge(self, x: torch.Tensor) -> torch.Tensor:
        rows, heads, n, dh = x.shape
        return x.transpose(1, 2).reshape(rows, n, heads * dh)

    def self_attention(self, i: int, layer, x: torch.Tensor) -> torch.Tensor:
        attn = layer.self_attn
        q, k, v = F.linear(x, attn.in_proj_weight, attn.in_proj_bias).chunk(3, dim=-1)
        q, k, v = self.split(q), self.split(k), self.split(v)
        if self.self_cache[i] is not None:
            past_k, past_v = self.self_cache[i]
            k, v = torch.cat([past_k, k], 2), torch.cat([past_v, v], 2)
        self.self_cache[i] = (k, v)
        out = F.scaled_dot_product_attention(q, k, v)
        return attn.out_proj(self.merge(out))

    def cross_attention(self, i: int, layer, x: torch.Tensor) -> torch.Tensor:
        attn = layer.multihead_attn
        d = attn.embed_dim
        q = self.split(F.linear(x, attn.in_proj_weight[:d], attn.in_proj_bias[:d]))
        k, v = self.cross[i]
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=self.cross_mask)
        return attn.out_proj(self.merge(out))

    def feed_forward(self, layer, x: torch.Tensor) -> torch.Tensor:
        return layer.linear2(layer.activation(layer.linear1(x)))

    def step(self, last: torch.Tensor) -> torch.Tensor:
        """Log-probabilities [rows, vocab] of the next token after `last` [rows]."""
        model = self.model
        x = model.target_embedding(last[:, None]) * math.sqrt(model.c["d_model"])
        x = x + model.pe[self.position:self.position + 1]
        for i, layer in enumerate(self.layers):
            if self.norm_first:
                x = x + self.self_attention(i, layer, layer.norm1(x))
                x = x + self.cross_attention(i, layer, layer.norm2(x))
                x = x + self.feed_forward(layer, layer.norm3(x))
            else:
                x = layer.norm1(x + self.self_attention(i, layer, x))
                x = layer.norm2(x + self.cross_attention(i, layer, x))
                x = layer.norm3(x + self.feed_forward(layer, x))
        if model.decoder.norm is not None:
            x = model.decoder.norm(x)
        self.position += 1
        return F.log_softmax(model.output_projection(x[:, 0]), dim=-1)

    def select(self, rows: torch.Tensor, sentences: torch.Tensor = None) -> None:
        """Keeps the self-attention cache of `rows` (beam parents, in order) and, when some
        sentences finished, the cross-attention cache of `sentences`' rows."""
        self.self_cache = [(k.index_select(0, rows), v.index_select(0, rows))
                           for k, v in self.self_cache]
        if sentences is not None:
            self.cross = [(k.index_select(0, sentences), v.index_select(0, sentences))
                          for k, v in self.cross]
            self.cross_mask = self.cross_mask.index_select(0, sentences)


class UncachedDecoder:
    """The same interface, re-running `nn.TransformerDecoder` over the whole prefix."""

    def __init__(self, model: Seq2Seq, memory: torch.Tensor, memory_pad: torch.Tensor):
        self.model, self.memory, self.memory_pad = model, memory, memory_pad
        self.prefix = None

    def step(self, last: torch.Tensor) -> torch.Tensor:
        last = last[:, None]
        self.prefix = last if self.prefix is None else torch.cat([self.prefix, last], 1)
        n = self.prefix.shape[1]
        causal = torch.triu(torch.ones(n, n, dtype=torch.bool), 1)
        hidden = self.model.decoder(self.model.embed(self.model.target_embedding, self.prefix),
                                    self.memory, tgt_mask=causal,
                                    memory_key_padding_mask=self.memory_pad)
        return F.log_softmax(self.model.output_projection(hidden[:, -1]), dim=-1)

    def select(self, rows: torch.Tensor, sentences: torch.Tensor = None) -> None:
        self.prefix = self.prefix.index_select(0, rows)
        if sentences is not None:
            self.memory = self.memory.index_select(0, sentences)
            self.memory_pad = self.memory_pad.index_select(0, sentences)


def encode(model: Seq2Seq, sources: list):
    """Pads the id lists (each ending with EOS) and runs the encoder once."""
    width = max(len(s) for s in sources)
    pad_id = model.c["pad_id"]
    src = torch.full((len(sources), width), pad_id, dtype=torch.long)
    for i, ids in enumerate(sources):
        src[i, :len(ids)] = torch.tensor(ids)
    pad = src == pad_id
    memory = model.encoder(model.embed(model.source_embedding, src), src_key_padding_mask=pad)
    return memory, pad


@torch.inference_mode()
def greedy(model, sources, search, cached=True):
    """One (tokens, log_prob) per source, as Rosetta's greedy search."""
    memory, pad = encode(model, sources)
    decoder = (CachedDecoder if cached else UncachedDecoder)(model, memory, pad)
    max_positions = model.c["max_positions"]
    max_lens = [search.max_len(len(s), max_positions) for s in sources]
    active = list(range(len(sources)))
    tokens = [[] for _ in sources]
    log_probs = [0.0] * len(sources)
    results = [None] * len(sources)
    last = torch.full((len(sources),), BOS, dtype=torch.long)
    step = 0
    while active:
        log_p = decoder.step(last)
        log_p[:, model.c["pad_id"]] = float("-inf")
        if step < search.min_len:
            log_p[:, EOS] = float("-inf")
        best = log_p.argmax(-1).tolist()
        eos = log_p[:, EOS].tolist()
        best_lp = log_p.max(-1).values.tolist()
        keep, next_last = [], []
        for row, sentence in enumerate(active):
            if step >= max_lens[sentence]:
                results[sentence] = (tokens[sentence], log_probs[sentence] + eos[row])
            elif best[row] == EOS:
                results[sentence] = (tokens[sentence], log_probs[sentence] + best_lp[row])
            else:
                tokens[sentence].append(best[row])
                log_probs[sentence] += best_lp[row]
                keep.append(row)
                next_last.append(best[row])
        if not keep:
            break
        if len(keep) < len(active):
            rows = torch.tensor(keep)
            decoder.select(rows, rows)
        active = [active[row] for row in keep]
        last = torch.tensor(next_last)
        step += 1
    return results


@torch.inference_mode()
def beam_search(model, sources, search, cached=True):
    """The best (tokens, score) per source, as Rosetta's beam search (n_best 1)."""
    k = search.beam
    memory, pad = encode(model, sources)
    decoder = (CachedDecoder if cached else UncachedDecoder)(model, memory, pad)
    max_positions = model.c["max_positions"]
    max_lens = [search.max_len(len(s), max_positions) for s in sources]
    batch = len(sources)
    active = list(range(batch))
    width = 1
    row_tokens = [[] for _ in range(batch)]
    row_log_probs = torch.zeros(batch)
    last = torch.full((batch,), BOS, dtype=torch.long)
    finished = [None] * batch  # best (score, tokens)
    n_finished = [0] * batch
    step = 0
    while active:
        log_p = decoder.step(last)
        log_p[:, model.c["pad_id"]] = float("-inf")
        if step < search.min_len:
            log_p[:, EOS] = float("-inf")
        vocab = log_p.shape[1]
        eos_column = log_p[:, EOS].tolist()
        cumulative = (log_p + row_log_probs[:, None]).view(len(active), width * vocab)
        n = min(2 * k, width * vocab)
        top_values, top_index = cumulative.topk(n, dim=-1)
        top_values, top_index = top_values.tolist(), top_index.tolist()
        row_lp = row_log_probs.tolist()
        next_active, kept_blocks, parents, next_tokens, next_lp, next_last = [], [], [], [], [], []
        for block, sentence in enumerate(active):
            base = block * width

            def finish(tokens, log_prob):
                score = search.score(log_prob, len(tokens))
                if finished[sentence] is None or score > finished[sentence][0]:
                    finished[sentence] = (score, tokens)
                n_finished[sentence] += 1

            if step >= max_lens[sentence]:
                for row in range(base, base + width):
                    log_prob = row_lp[row] + eos_column[row]
                    if math.isfinite(log_prob):
                        finish(row_tokens[row], log_prob)
                continue
            continuing = []
            for rank, (flat, value) in enumerate(zip(top_index[block], top_values[block])):
                if not math.isfinite(value):
                    break
                row, token = base + flat // vocab, flat % vocab
                if token == EOS:
                    if rank < k:
                        finish(row_tokens[row], value)
                else:
                    continuing.append((row, token, value))
                    if len(continuing) == k:
                        break
            if not continuing:
                continue
            if search.stop == "count":
                done = n_finished[sentence] >= k
            else:
                bound = search.best_final_score(continuing[0][2], step + 1, max_lens[sentence])
                done = finished[sentence] is not None and finished[sentence][0] >= bound
            if done:
                continue
            while len(continuing) < k:
                continuing.append((continuing[0][0], continuing[0][1], float("-inf")))
            next_active.append(sentence)
            kept_blocks.append(block)
            for row, token, log_prob in continuing:
                parents.append(row)
                next_tokens.append(row_tokens[row] + [token])
                next_lp.append(log_prob)
                next_last.append(token)
        if not next_active:
            break
        rows = torch.tensor(parents)
        if width == 1:
            # First step: each sentence's single row becomes k beams (cross cache included).
            decoder.select(rows, torch.tensor(kept_blocks).repeat_interleave(k))
        elif len(kept_blocks) < len(active):
            sentence_rows = (torch.tensor(kept_blocks)[:, None] * width
                             + torch.arange(width)).flatten()
            decoder.select(rows, sentence_rows)
        else:
            decoder.select(rows)
        active = next_active
        width = k
        row_tokens = next_tokens
        row_log_probs = torch.tensor(next_lp)
        last = torch.tensor(next_last)
        step += 1
    return [(f[1], f[0]) if f is not None else ([], float("-inf")) for f in finished]


def translate(model, sources, search, batch_size, cached=True):
    """Token lists per source, sorted by length into batches as `rosetta translate` does."""
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    out = [None] * len(sources)
    run = greedy if search.beam == 1 else beam_search
    for start in range(0, len(order), batch_size):
        chunk = order[start:start + batch_size]
        for i, (tokens, _) in zip(chunk, run(model, [sources[i] for i in chunk], search,
                                               cached)):
            out[i] = tokens
    return out


def read_sources(source_tokenizer, lines, max_positions):
    """Ids of each line + EOS, cut to max_positions - 1 tokens before the EOS (blank: None)."""
    cut = max(max_positions - 1, 1)
    return [source_tokenizer.encode(line, add_special_tokens=False).ids[:cut] + [EOS]
            if line.strip() else None for line in lines]


def configure_threads(threads: int) -> str:
    """Applies the thread settings (before any parallel work) and describes every setting."""
    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # already set, or inter-op work already started in this process
        pass
    return settings()


def settings() -> str:
    """The PyTorch settings this process decodes with, in one line."""
    backends = []
    if torch.backends.mkl.is_available():
        backends.append("MKL")
    if torch.backends.mkldnn.is_available():
        backends.append("oneDNN")
    return (f"PyTorch {torch.__version__}: eager, torch.inference_mode(), "
            f"{torch.get_num_threads()} intra-op threads, "
            f"{torch.get_num_interop_threads()} inter-op thread(s), "
            f"CPU ISA {torch.backends.cpu.get_cpu_capability()}, "
            f"BLAS/kernels: {' + '.join(backends) or 'none'}")


def bench(model, work, args) -> None:
    """Decoding speed per (beam, batch size), as `rosetta bench-decode` measures it."""
    import resource
    import time

    print(f"{len(work)} sentences, PyTorch {torch.__version__} (cached decoder), "
          f"{torch.get_num_threads()} threads")
    print(f"settings: {settings()}")
    print("| search | batch | sentences | seconds | sentences/s | target tokens/s | peak RSS MiB |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for beam in (int(b) for b in args.beams.split(",")):
        for batch in (int(b) for b in args.batch_sizes.split(",")):
            part = work[:args.batch1_limit] if batch == 1 and args.batch1_limit > 0 else work
            search = Search(beam, args.alpha, args.length_norm, args.beam_stop, args.max_len_a,
                            args.max_len_b, args.min_len)
            with torch.inference_mode():  # (greedy and beam_search also enter it)
                start = time.perf_counter()
                out = translate(model, part, search, batch)
                seconds = time.perf_counter() - start
            produced = sum(len(t) + 1 for t in out)
            name = "greedy" if beam == 1 else f"beam {beam}"
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"| {name} | {batch} | {len(part)} | {seconds:.1f} | {len(part) / seconds:.1f} "
                  f"| {produced / seconds:.0f} | {rss:.0f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="directory written by `rosetta export --format safetensors "
                                      "--transformer-prefix \"\"`")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--alpha", type=float, default=0.6)
    parser.add_argument("--length-norm", choices=["gnmt", "power"], default="gnmt")
    parser.add_argument("--beam-stop", choices=["bound", "count"], default="bound")
    parser.add_argument("--max-len-a", type=float, default=1.5)
    parser.add_argument("--max-len-b", type=int, default=10)
    parser.add_argument("--min-len", type=int, default=0,
                        help="EOS forbidden before this many tokens (Rosetta's min_len)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--check", type=int, default=0, metavar="N",
                        help="compare cached and uncached decoding on the first N lines")
    parser.add_argument("--bench", action="store_true", help="print decoding speeds")
    parser.add_argument("--beams", default="1,5")
    parser.add_argument("--batch-sizes", default="1,64")
    parser.add_argument("--batch1-limit", type=int, default=100)
    args = parser.parse_args()
    described = configure_threads(args.threads)
    if not args.bench:  # (--bench prints them in its header)
        print(described, file=sys.stderr)
    model, source, target = load(args.model)
    lines = [line.rstrip("\r") for line in sys.stdin.read().split("\n")]
    if lines and lines[-1] == "":
        lines.pop()
    ids = read_sources(source, lines, model.c["max_positions"])
    search = Search(args.beam, args.alpha, args.length_norm, args.beam_stop, args.max_len_a,
                    args.max_len_b, args.min_len)
    if args.check:
        work = [s for s in ids if s is not None][:args.check]
        for beam in (1, args.beam):
            s = Search(beam, args.alpha, args.length_norm, args.beam_stop, args.max_len_a,
                       args.max_len_b, args.min_len)
            cached = translate(model, work, s, args.batch_size, cached=True)
            uncached = translate(model, work, s, args.batch_size, cached=False)
            same = sum(a == b for a, b in zip(cached, uncached))
            print(f"beam {beam}: cached = uncached on {same} of {len(work)} sentences")
            if same != len(work):
                sys.exit(1)
        return
    work = [s for s in ids if s is not None]
    if args.bench:
        bench(model, work, args)
        return
    outputs = iter(translate(model, work, search, args.batch_size))
    for sentence in ids:
        text = "" if sentence is None else target.decode(next(outputs), skip_special_tokens=True)
        print(text.replace("\n", " ").replace("\r", " "))


if __name__ == "__main__":
    main()
