"""Random GPT-2 tokens in llm.c's token file format, for bench/pools-h200.sh's llm.c trace.

    python3 bench/python/llmc_tokens.py DIR      (writes DIR/train.bin and DIR/val.bin)

The format, as llm.c's data loader reads it: 256 little-endian int32 (20240520, 1, the token
count, then zeros), then the tokens as little-endian uint16, each below GPT-2's 50,257. The
allocations of a training run do not depend on the tokens' values."""
import os
import random
import struct
import sys
from array import array

MAGIC, VERSION, VOCAB = 20240520, 1, 50257


def write(path, count, rng):
    tokens = array("H", (rng.randrange(VOCAB) for _ in range(count)))
    if sys.byteorder != "little":
        tokens.byteswap()
    with open(path, "wb") as f:
        f.write(struct.pack("<256i", MAGIC, VERSION, count, *([0] * 253)))
        tokens.tofile(f)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    os.makedirs(sys.argv[1], exist_ok=True)
    rng = random.Random(1)
    write(os.path.join(sys.argv[1], "train.bin"), 1 << 20, rng)
    write(os.path.join(sys.argv[1], "val.bin"), 1 << 17, rng)


if __name__ == "__main__":
    main()
