#!/usr/bin/env python3
"""Fetches the real corpora the configurations name into data/, and verifies them.

    python3 scripts/get_data.py multi30k            # data/multi30k/{train,val}.{en,de,fr,cs}
    python3 scripts/get_data.py tatoeba             # data/tatoeba-fra-eng/{train,valid,test}.{en,fr}.gz
    python3 scripts/get_data.py all --from ../shared/data   # copy a local copy instead (no internet)

Multi30k (task 1, raw): the official multi30k/dataset repository at a pinned commit,
`data/task1/raw/{train,val}.{en,de,fr}.gz`, gunzipped. Research/educational use (see README).

Tatoeba English-French: manythings.org's Anki `fra-eng` file of 2019-04-07 (Tatoeba, CC-BY 2.0;
attribution "www.manythings.org/anki and tatoeba.org"), from a pinned mirror, split
deterministically on the English side (md5(english) % 100: 0 test, 1 valid, else train) and
gzipped.

Every file is checked against the SHA-256 of its text below; a mismatch is an error and nothing
is left half-written (files are written to a temporary name and renamed). `--from DIR` takes the
files from DIR (or DIR/multi30k, DIR/tatoeba-fra-eng), plain or gzipped, and checks them the
same way. Standard library only.
"""

import argparse
import gzip
import hashlib
import io
import os
import pathlib
import sys
import urllib.request
import zipfile

ROOT = pathlib.Path(__file__).resolve().parent.parent

MULTI30K_COMMIT = "a3d2e0d26b56f3846f66a952536ffed4e401d05a"
MULTI30K_URL = f"https://github.com/multi30k/dataset/raw/{MULTI30K_COMMIT}/data/task1/raw/{{name}}.gz"
# SHA-256 of the decompressed text.
MULTI30K = {
    "train.en": "460a15fbd157e34a7a9957ee388c1ca247fe47af3ef25fb50442af6c274e0fc6",
    "train.de": "2c2b73fd2b548fbcde3a875e0a78d6ee94d498bfdee6bd3eae3945779e9ddf72",
    "train.fr": "5925a3c18f1587b6b54b87743106e6e8ab93618edb6f65d19eac0621f853a10d",
    "val.en": "1f2a23d992769b5b3d209b0a10dd0b77c08cceb1f20dfb97ed0aafa49d107227",
    "val.de": "660e09eb7e1da2f856ea13ee5ad3cf6d36b3d5b0b733c857e94c5747a3dfc660",
    "val.fr": "5304e444d842e962b2dda4d816b70b22a1765b15401642b7ca37a67477e708dc",
    "train.cs": "2be68b38c8d586ff4f54eb13cc6e1baaaa053695b3f070d3038303a47f2268da",
    "val.cs": "d53827e469b0a1ca8d57e9e26b2b64c4bc4b33f5479c7b03ae87ae5c882c3e33",
}

TATOEBA_URL = "https://github.com/modelexlab/data/raw/adddaf33ac35572bcfeb421efec29435e7ea9332/fra-eng.zip"
TATOEBA_ZIP_SHA256 = "161c93f18da3a7e6df611ed961426613260de8af06ccf8c79c977afe5135ac44"
# SHA-256 of the decompressed text of each split.
TATOEBA = {
    "train.en": "9fb2c467769ebcdf83ca4bd16c41396c1cff0084d7f8e0dda08734699c6d3047",
    "train.fr": "84c00feb7656e76754eee0678dab3a37c3f02d330069bf31faa477ed97a0bba7",
    "valid.en": "799e96c32cd9ae781edeba5b724c08fc6c9f1ea0e21984aa81480fb867544baf",
    "valid.fr": "a192f1f8a992290a45e017bd1870fab32f1acbe5e28842c6ef82366557ce2166",
    "test.en": "4651516f58ba1158f29e28f07d348b40af0282138612ad6f4184a24efc1c39a8",
    "test.fr": "f7319bbe567523f98c29267c215c0bb633e1bec5d86dbbbb5e2467aae3da8796",
}


NEWLINE = b"\n"


class DataError(Exception):
    pass


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def verify(name: str, text: bytes, expected: str, origin: str) -> None:
    got = sha256(text)
    if got != expected:
        raise DataError(f"{name} from {origin}: SHA-256 {got}, expected {expected}")


def download(url: str) -> bytes:
    print(f"  downloading {url}", flush=True)
    try:
        with urllib.request.urlopen(url, timeout=120) as response:
            return response.read()
    except OSError as e:
        raise DataError(f"cannot download {url}: {e} (use --from DIR with a local copy)") from e


def write_atomic(path: pathlib.Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def gzip_bytes(text: bytes) -> bytes:
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", compresslevel=9, mtime=0, filename="") as f:
        f.write(text)
    return buffer.getvalue()


def read_local(base: pathlib.Path, sub: str, name: str) -> tuple[bytes, str]:
    """The text of `name` from base or base/sub, plain or .gz."""
    for folder in (base / sub, base):
        for candidate, packed in ((folder / name, False), (folder / f"{name}.gz", True)):
            if candidate.is_file():
                data = candidate.read_bytes()
                return (gzip.decompress(data) if packed else data), str(candidate)
    raise DataError(f"{name} not found in {base / sub} or {base} (plain or .gz)")


def multi30k(dest: pathlib.Path, source: pathlib.Path | None) -> None:
    print(f"multi30k -> {dest}")
    for name, expected in MULTI30K.items():
        if source is None:
            url = MULTI30K_URL.format(name=name)
            text, origin = gzip.decompress(download(url)), url
        else:
            text, origin = read_local(source, "multi30k", name)
        verify(name, text, expected, origin)
        write_atomic(dest / name, text)
        print(f"  {name}: {text.count(NEWLINE)} lines, verified")


def split_tatoeba(fra_txt: bytes) -> dict[str, bytes]:
    """The deterministic split of PROVENANCE: md5(english) % 100 → 0 test, 1 valid, else train."""
    sides: dict[str, list[str]] = {k: [] for k in TATOEBA}
    for line in fra_txt.decode("utf-8").split("\n"):
        if not line:
            continue
        english, french = line.split("\t")[:2]
        bucket = int(hashlib.md5(english.encode("utf-8")).hexdigest(), 16) % 100
        split = "test" if bucket == 0 else "valid" if bucket == 1 else "train"
        sides[f"{split}.en"].append(english)
        sides[f"{split}.fr"].append(french)
    return {k: ("\n".join(v) + "\n").encode("utf-8") for k, v in sides.items()}


def tatoeba(dest: pathlib.Path, source: pathlib.Path | None) -> None:
    print(f"tatoeba -> {dest}")
    if source is None:
        archive = download(TATOEBA_URL)
        if sha256(archive) != TATOEBA_ZIP_SHA256:
            raise DataError(f"{TATOEBA_URL}: SHA-256 {sha256(archive)}, expected {TATOEBA_ZIP_SHA256}")
        with zipfile.ZipFile(io.BytesIO(archive)) as z:
            texts = split_tatoeba(z.read("fra-eng/fra.txt"))
            about = z.read("fra-eng/_about.txt")
        origin = TATOEBA_URL
        files = {name: (text, origin) for name, text in texts.items()}
    else:
        files = {name: read_local(source, "tatoeba-fra-eng", name) for name in TATOEBA}
        about_path = next((p for p in (source / "tatoeba-fra-eng" / "ABOUT-manythings.txt",
                                       source / "ABOUT-manythings.txt") if p.is_file()), None)
        about = about_path.read_bytes() if about_path else None
    for name, expected in TATOEBA.items():
        text, origin = files[name]
        verify(name, text, expected, origin)
        write_atomic(dest / f"{name}.gz", gzip_bytes(text))
        print(f"  {name}.gz: {text.count(NEWLINE)} lines, verified")
    if about is not None:
        write_atomic(dest / "ABOUT-manythings.txt", about)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus", choices=["multi30k", "tatoeba", "all"])
    ap.add_argument("--from", dest="source", type=pathlib.Path,
                    help="take the files from this folder instead of downloading them")
    ap.add_argument("--dest", type=pathlib.Path, default=ROOT / "data", help="default: data/")
    args = ap.parse_args()
    try:
        if args.corpus in ("multi30k", "all"):
            multi30k(args.dest / "multi30k", args.source)
        if args.corpus in ("tatoeba", "all"):
            tatoeba(args.dest / "tatoeba-fra-eng", args.source)
    except DataError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
