"""Compare two --logits dumps of ml_run: per step, max|a-b| / max|b| (the
error relative to that step's logit scale), and the greedy token of each.
usage: compare_logits.py A B VOCAB TOL   -> prints the worst step; exit 1 if over TOL
or if the files differ in length or in any greedy token."""
import sys

import numpy as np


def main():
    a_path, b_path, vocab, tol = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    a = np.fromfile(a_path, dtype="<f4")
    b = np.fromfile(b_path, dtype="<f4")
    if a.size != b.size or a.size == 0 or a.size % vocab:
        print(f"sizes differ or are empty: {a.size} vs {b.size} floats")
        return 1
    a, b = a.reshape(-1, vocab), b.reshape(-1, vocab)
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        print("non-finite logits")
        return 1
    rel = np.abs(a - b).max(axis=1) / np.maximum(np.abs(b).max(axis=1), 1e-30)
    same_top1 = (a.argmax(axis=1) == b.argmax(axis=1)).all()
    print(f"{a.shape[0]} steps, max relative error {rel.max():.3g} (step {rel.argmax()}), "
          f"greedy tokens {'identical' if same_top1 else 'DIFFER'}")
    return 0 if rel.max() <= tol and same_top1 else 1


if __name__ == "__main__":
    sys.exit(main())
