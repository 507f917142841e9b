#!/usr/bin/env python3
"""The PyTorch reference: trains the model of a Rosetta run with the same recipe on the same data.

    python scripts/train_torch.py --run runs/multi30k-en-de [--minutes 60] [--threads 2]
        [--device cpu] [--output runs/multi30k-en-de-torch] [--beam 5] [--average N]
        [--init rosetta|xavier]

`--run` is a directory written by `rosetta train`: its `config.toml` gives the corpora, the
length filter, the token budget, label smoothing, clipping, Adam, the schedule and the seed; its
`tokenizer*.json` (Hugging Face `tokenizers` format) the subwords; a checkpoint's `state.json`
the resolved model. The script builds the same architecture from PyTorch's layers
(`rosetta_torch.Seq2Seq`), initialised as Rosetta initialises (`--init rosetta`), frames pairs
the same way (source + EOS; BOS + target; target + EOS), filters and batches the same way
(length buckets under a padded-token budget, shuffled per epoch), trains for the same wall-clock
budget (or `max_steps`/`max_epochs`), validates every `validate_every` steps, and at the end
decodes the validation source (greedy and beam) and scores it with sacreBLEU. Everything goes to
`--output`: `metrics.jsonl` (the same records as Rosetta's), `valid.hyp` and `summary.json`.

Needs `torch`, `tokenizers` and `sacrebleu` (PyPI).
"""

import argparse
import collections
import gzip
import json
import math
import pathlib
import random
import sys
import time
import tomllib

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import sacrebleu  # noqa: E402
import torch  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

from rosetta_torch import Seq2Seq, loss_sum, noam, peak_rss_bytes  # noqa: E402

PAD, UNK, BOS, EOS = 0, 1, 2, 3


def read_lines(path: pathlib.Path) -> list[str]:
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    return data.decode("utf-8").replace("\r\n", "\n").split("\n")[:-1] if data else []


def read_pairs(files: dict, base: pathlib.Path) -> tuple[list[str], list[str]]:
    if "tsv" in files:
        lines = read_lines(base / files["tsv"])
        pairs = [line.split("\t")[:2] for line in lines]
        return [p[0] for p in pairs], [p[1] for p in pairs]
    source, target = read_lines(base / files["source"]), read_lines(base / files["target"])
    if len(source) != len(target):
        raise SystemExit(f"{files['source']} has {len(source)} lines, {files['target']} {len(target)}")
    keep = [i for i in range(len(source)) if source[i].strip() and target[i].strip()]
    return [source[i] for i in keep], [target[i] for i in keep]


def encode(tokenizer: Tokenizer, lines: list[str]) -> list[list[int]]:
    return [e.ids for e in tokenizer.encode_batch(lines, add_special_tokens=False)]


def filter_pairs(src, tgt, f: dict):
    """Rosetta's length filter, on framed lengths (+1 for EOS/BOS)."""
    max_s, max_t = f.get("max_source_tokens", 256), f.get("max_target_tokens", 256)
    ratio = f.get("max_length_ratio")
    kept = []
    for s, t in zip(src, tgt):
        sl, tl = len(s) + 1, len(t) + 1
        if sl > max_s or tl > max_t or (ratio and max(sl, tl) > ratio * min(sl, tl)):
            continue
        kept.append((s, t))
    return kept


def plan(pairs, batch: dict, rng: random.Random) -> list[list[int]]:
    """Length-bucketed batches under a padded-token budget (or fixed sentence counts), shuffled.

    Sorted as Rosetta's `bucket` says: `both_sides` (the default) by the longer side, then the
    source, then the target length; `longer_side` by the longer side only. Ties are random."""
    if batch.get("by", "tokens") == "sentences":
        order = list(range(len(pairs)))
        rng.shuffle(order)
        n = batch["sentences"]
        return [order[i:i + n] for i in range(0, len(order), n)]
    budget = batch.get("max_tokens", 4096)
    ties = [rng.random() for _ in pairs]
    bucket = batch.get("bucket", "both_sides")
    if bucket not in ("both_sides", "longer_side"):
        raise SystemExit(f"data.batch.bucket: unknown value {bucket!r}")

    def key(i):
        s, t = len(pairs[i][0]) + 1, len(pairs[i][1]) + 1
        return (max(s, t), s, t, ties[i]) if bucket == "both_sides" else (max(s, t), ties[i])

    order = sorted(range(len(pairs)), key=key)
    batches, current, longest = [], [], 0
    for i in order:
        length = max(len(pairs[i][0]), len(pairs[i][1])) + 1
        grown = max(longest, length)
        if current and grown * (len(current) + 1) > budget:
            batches.append(current)
            current, grown = [], length
        current.append(i)
        longest = grown
    if current:
        batches.append(current)
    rng.shuffle(batches)
    return batches


def tensors(pairs, indices, device):
    src = [pairs[i][0] + [EOS] for i in indices]
    tin = [[BOS] + pairs[i][1] for i in indices]
    tout = [pairs[i][1] + [EOS] for i in indices]

    def pad(rows):
        width = max(len(r) for r in rows)
        return torch.tensor([r + [PAD] * (width - len(r)) for r in rows], device=device)

    return pad(src), pad(tin), pad(tout)


@torch.inference_mode()
def validation_loss(model, pairs, batch, device, c) -> float:
    model.eval()
    total, tokens = 0.0, 0
    for indices in plan(pairs, batch, random.Random(0)):
        src, tin, tout = tensors(pairs, indices, device)
        total += loss_sum(model(src, tin), tout, PAD, 0.0).item()
        tokens += int((tout != PAD).sum())
    model.train()
    return total / max(tokens, 1)


@torch.inference_mode()
def greedy(model, src, max_len):
    pad_mask = src == PAD
    memory = model.encoder(model.embed(model.source_embedding, src), src_key_padding_mask=pad_mask)
    out = torch.full((src.shape[0], 1), BOS, device=src.device)
    done = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
    for _ in range(max_len):
        n = out.shape[1]
        causal = torch.triu(torch.ones(n, n, dtype=torch.bool, device=src.device), 1)
        hidden = model.decoder(model.embed(model.target_embedding, out), memory, tgt_mask=causal,
                               memory_key_padding_mask=pad_mask)
        nxt = model.output_projection(hidden[:, -1]).argmax(-1)
        nxt = torch.where(done, torch.full_like(nxt, PAD), nxt)
        out = torch.cat([out, nxt[:, None]], 1)
        done |= nxt == EOS
        if bool(done.all()):
            break
    rows = []
    for row in out[:, 1:].tolist():
        rows.append(row[: row.index(EOS)] if EOS in row else [t for t in row if t != PAD])
    return rows


@torch.inference_mode()
def beam(model, src_row, beam_size, max_len, alpha=0.6):
    """Beam search for one sentence, GNMT length penalty ((5 + len) / 6) ** alpha."""
    src = torch.tensor([src_row], device=next(model.parameters()).device)
    memory = model.encoder(model.embed(model.source_embedding, src))
    beams, finished = [([BOS], 0.0)], []
    for _ in range(max_len):
        seqs = torch.tensor([b[0] for b in beams], device=src.device)
        n = seqs.shape[1]
        causal = torch.triu(torch.ones(n, n, dtype=torch.bool, device=src.device), 1)
        hidden = model.decoder(model.embed(model.target_embedding, seqs),
                               memory.expand(len(beams), -1, -1), tgt_mask=causal)
        logp = torch.log_softmax(model.output_projection(hidden[:, -1]), -1)
        scores = torch.tensor([b[1] for b in beams], device=src.device)[:, None] + logp
        top = scores.flatten().topk(2 * beam_size)
        candidates = []
        for score, flat in zip(top.values.tolist(), top.indices.tolist()):
            b, token = divmod(flat, logp.shape[1])
            seq = beams[b][0] + [token]
            if token == EOS:
                length = len(seq) - 1
                finished.append((seq[1:-1], score / (((5 + length) / 6) ** alpha)))
            else:
                candidates.append((seq, score))
            if len(candidates) == beam_size:
                break
        beams = candidates
        if len(finished) >= beam_size or not beams:
            break
    if not finished:
        finished = [(b[0][1:], b[1] / (((5 + len(b[0]) - 1) / 6) ** alpha)) for b in beams]
    return max(finished, key=lambda f: f[1])[0]


def score(model, valid, vtgt_text, tok_tgt, c, beam_size, device, hyp_path) -> dict:
    """Greedy and beam decoding of the validation source, scored with sacreBLEU; the beam (or, with
    `beam_size` 1, the greedy) output is written to `hyp_path`."""
    model.eval()
    max_len = lambda n: min(c["max_positions"] - 1, int(1.5 * n) + 10)  # noqa: E731  (as SearchConfig)
    hyps_greedy = []
    for i in range(0, len(valid), 64):
        rows = [valid[j][0][: c["max_positions"] - 1] + [EOS] for j in range(i, min(i + 64, len(valid)))]
        width = max(len(r) for r in rows)
        batch = torch.tensor([r + [PAD] * (width - len(r)) for r in rows], device=device)
        hyps_greedy += greedy(model, batch, max_len(width))
    greedy_text = [tok_tgt.decode(h) for h in hyps_greedy]
    refs = [vtgt_text]
    out = dict(greedy_bleu=sacrebleu.corpus_bleu(greedy_text, refs).score,
               greedy_chrf=sacrebleu.corpus_chrf(greedy_text, refs).score)
    text = greedy_text
    if beam_size > 1:
        text = [tok_tgt.decode(beam(model, s[: c["max_positions"] - 1] + [EOS], beam_size, max_len(len(s) + 1)))
                for s, _ in valid]
        metric = sacrebleu.BLEU()
        out.update(beam=beam_size, beam_bleu=metric.corpus_score(text, refs).score,
                   beam_chrf=sacrebleu.corpus_chrf(text, refs).score, bleu_signature=str(metric.get_signature()))
    hyp_path.write_text("\n".join(text) + "\n")
    model.train()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", type=pathlib.Path, required=True, help="a Rosetta run directory")
    ap.add_argument("--minutes", type=float, default=None,
                    help="wall-clock training budget (then the run's max_steps/max_epochs are ignored)")
    ap.add_argument("--max-steps", type=int, default=None, help="stop after this many steps")
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--output", type=pathlib.Path, default=None)
    ap.add_argument("--beam", type=int, default=5)
    ap.add_argument("--init", choices=["rosetta", "xavier"], default="rosetta",
                    help="initialise as Rosetta does (default), or Xavier on every matrix "
                         "(PyTorch's Transformer tutorial)")
    ap.add_argument("--average", type=int, default=0,
                    help="also score the mean of the last N snapshots, taken every checkpoint.every steps "
                         "and at the end (as `rosetta average --last N`)")
    ap.add_argument("--base", type=pathlib.Path, default=pathlib.Path("."),
                    help="directory the corpus paths of config.toml are relative to")
    args = ap.parse_args()

    config = tomllib.loads((args.run / "config.toml").read_text())
    states = sorted(args.run.glob("checkpoints/*/state.json"))
    if not states:
        raise SystemExit(f"{args.run}: no checkpoint state.json (train a few steps with rosetta first)")
    c = json.loads(states[-1].read_text())["model"]
    joint = args.run / "tokenizer.json"
    tok_src = Tokenizer.from_file(str(joint if joint.exists() else args.run / "tokenizer.source.json"))
    tok_tgt = Tokenizer.from_file(str(joint if joint.exists() else args.run / "tokenizer.target.json"))
    data, training = config["data"], config.get("training", {})
    if "directions" in data:
        sys.exit(f"{args.run / 'config.toml'}: a multilingual run ([[data.directions]]); this script reproduces bilingual runs only")
    torch.set_num_threads(args.threads)
    seed = training.get("seed", 1)
    torch.manual_seed(seed)
    rng = random.Random(seed)
    device = torch.device(args.device)
    output = args.output or args.run.with_name(args.run.name + "-torch")
    output.mkdir(parents=True, exist_ok=True)

    src, tgt = read_pairs(data["train"], args.base)
    train = filter_pairs(encode(tok_src, src), encode(tok_tgt, tgt), data.get("filter", {}))
    vsrc_text, vtgt_text = read_pairs(data["valid"], args.base)
    valid = list(zip(encode(tok_src, vsrc_text), encode(tok_tgt, vtgt_text)))
    print(f"train {len(train)} pairs (of {len(src)}), valid {len(valid)}", flush=True)

    model = Seq2Seq(c)
    if args.init == "rosetta":
        model.init_like_rosetta()
    model = model.to(device).train()
    opt = training.get("optimizer", {})
    adam = torch.optim.Adam(model.parameters(), lr=0.0, betas=(opt.get("beta1", 0.9), opt.get("beta2", 0.98)),
                            eps=opt.get("epsilon", 1e-9))
    schedule = training.get("schedule", {"kind": "noam", "factor": 1.0, "warmup": 4000})
    smoothing = training.get("label_smoothing", 0.1)
    clip = training.get("clip_norm", 0.0) or math.inf
    if args.minutes or args.max_steps:
        max_steps, max_epochs = args.max_steps, None
    else:
        max_steps = training.get("max_steps")
        max_epochs = training.get("max_epochs", None if max_steps else 10)
    validate_every, log_every = training.get("validate_every", 1000), training.get("log_every", 50)
    budget = args.minutes * 60 if args.minutes else math.inf
    snapshot_every = config.get("checkpoint", {}).get("every", 0)
    snapshots = collections.deque(maxlen=max(args.average, 1))

    def snapshot(at: int) -> None:
        if args.average > 1 and (not snapshots or snapshots[-1][0] != at):
            snapshots.append((at, {k: v.detach().clone() for k, v in model.state_dict().items()}))
    metrics = (output / "metrics.jsonl").open("w")
    start, step, epoch, best = time.perf_counter(), 0, 0, math.inf
    window = dict(loss=0.0, tokens=0, t=time.perf_counter())
    stop = False
    while not stop and (max_epochs is None or epoch < max_epochs):
        for indices in plan(train, data.get("batch", {}), rng):
            s, tin, tout = tensors(train, indices, device)
            step += 1
            if schedule.get("kind", "noam") == "noam":
                lr = noam(c["d_model"], step, schedule.get("warmup", 4000), schedule.get("factor", 1.0))
            else:
                lr = schedule["peak"] * min(step / max(schedule["warmup"], 1), (max(schedule["warmup"], 1) / step) ** 0.5)
            for group in adam.param_groups:
                group["lr"] = lr
            adam.zero_grad(set_to_none=True)
            tokens = int((tout != PAD).sum())
            total = loss_sum(model(s, tin), tout, PAD, smoothing)
            (total / tokens).backward()
            norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), clip))
            adam.step()
            window["loss"] += total.item()
            window["tokens"] += tokens
            if step % log_every == 0:
                seconds = time.perf_counter() - window["t"]
                record = dict(kind="train", step=step, epoch=epoch, loss=window["loss"] / window["tokens"],
                              learning_rate=lr, grad_norm=norm,
                              target_tokens_per_second=window["tokens"] / seconds)
                metrics.write(json.dumps(record) + "\n")
                metrics.flush()
                print(f"step {step} loss {record['loss']:.3f} lr {lr:.2e} "
                      f"{record['target_tokens_per_second']:.0f} tok/s", flush=True)
                window = dict(loss=0.0, tokens=0, t=time.perf_counter())
            if snapshot_every and step % snapshot_every == 0:
                snapshot(step)
            elapsed = time.perf_counter() - start
            if validate_every and step % validate_every == 0:
                v = validation_loss(model, valid, data.get("batch", {}), device, c)
                best = min(best, v)
                metrics.write(json.dumps(dict(kind="valid", step=step, epoch=epoch, loss=v,
                                              perplexity=math.exp(v), seconds=elapsed)) + "\n")
                print(f"step {step}: validation loss {v:.3f}", flush=True)
            if (max_steps and step >= max_steps) or elapsed >= budget:
                stop = True
                break
        epoch += 1
    train_seconds = time.perf_counter() - start
    snapshot(step)
    v = validation_loss(model, valid, data.get("batch", {}), device, c)
    summary = dict(framework=f"pytorch {torch.__version__}", init=args.init, steps=step, epochs=epoch,
                   train_seconds=train_seconds, best_valid_loss=min(best, v), peak_rss_bytes=peak_rss_bytes())
    summary.update(score(model, valid, vtgt_text, tok_tgt, c, args.beam, device, output / "valid.hyp"))
    summary["valid_loss"] = v
    if args.average > 1:
        steps = [at for at, _ in snapshots]
        mean = {k: sum(snap[k].float() for _, snap in snapshots) / len(snapshots) for k in snapshots[-1][1]}
        model.load_state_dict({k: mean[k].to(snapshots[-1][1][k].dtype) for k in mean})
        averaged = dict(steps=steps, valid_loss=validation_loss(model, valid, data.get("batch", {}), device, c))
        averaged.update(score(model, valid, vtgt_text, tok_tgt, c, args.beam, device, output / "valid.averaged.hyp"))
        summary["averaged"] = averaged
    (output / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
