"""The fixed bilingual sentences a build checks its converted model on, and the checks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from mnemoweave.embed.artifacts import ModelBuildError

if TYPE_CHECKING:
    import numpy as np

# English, Chinese, mixed, code, emoji, full-width, whitespace and empty-ish edge cases.
# All stay well under the runtime's 256-token truncation, which the references lack.
PARITY_TEXTS: tuple[str, ...] = (
    "use English for code comments",
    "以后代码注释都用英文",
    "The deployment window is Friday at 18:00",
    "数据库使用 PostgreSQL 15，连接池大小为 20",
    "用户偏好用 Python 写后端，前端用 React + TypeScript",
    "Run `pytest -q` before every commit 🚀",
    "emoji only 😀😀👍🏽",
    "ＦＵＬＬ　ｗｉｄｔｈ　１２３ and 全角标点！？",
    "繁體中文測試，還有標點！",
    "  leading and   multiple   spaces  ",
    "Tab\tand\nnewline\r\nend",
    "ß café naïve résumé Ünïcödé",
    'C++ / C# / F# -> Rust? {"key": [1, 2]}',
    "def add(a: int, b: int) -> int:\n    return a + b",
    "x",
    "。",
    "",
    "   ",
    "\u200b",
    "The user prefers tabs over spaces and a maximum line width of 100 characters, "
    "and wants every reply in Chinese: 所有回复都使用中文。",
)


def check_cosine(
    name: str, texts: Sequence[str], got: np.ndarray, ref: np.ndarray, threshold: float
) -> float:
    """Min cosine of `got` vs `ref`; raises ModelBuildError naming the worst text if too low."""
    import numpy as np

    cos = (got * ref).sum(axis=1) / np.maximum(
        np.linalg.norm(got, axis=1) * np.linalg.norm(ref, axis=1), 1e-12
    )
    worst = int(cos.argmin())
    if cos[worst] < threshold:
        raise ModelBuildError(
            f"{name}: the converted model disagrees with the reference encoder "
            f"(cosine {cos[worst]:.6f} < {threshold} on {texts[worst]!r}); "
            "the model was not installed"
        )
    return float(cos[worst])


def check_token_ids(
    name: str, texts: Sequence[str], got: list[list[int]], ref: list[list[int]]
) -> None:
    """Raise ModelBuildError at the first text whose token ids differ from the reference."""
    for text, a, b in zip(texts, got, ref, strict=True):
        if a != b:
            raise ModelBuildError(
                f"{name}: tokenizer.json disagrees with the reference tokenizer on {text!r}: "
                f"{a[:16]} != {b[:16]}; the model was not installed"
            )
