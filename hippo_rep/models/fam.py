"""TransformerFAM (Hwang et al. 2024) at token level: a small decoder-only transformer whose
attention is full, block sliding-window (BSWA) or BSWA plus feedback attention memory (FAM).

Terms (Hwang et al. 2024, "TransformerFAM: Feedback attention is working memory", Fig. 2):

- The sequence is cut into blocks of ``B = block_size`` tokens; block τ holds positions
  ``τB … τB+B-1``.
- **BSWA**: a query in block τ attends causally within its block and fully to the ``M = n_mem``
  previous blocks ("memory segments"), whose keys/values are those the blocks computed from
  their own layer input. Gradients flow into the memory segments unless ``mem_stop_grad``.
- **FAM**: each layer keeps ``F = n_fam`` feedback-memory vectors. For block τ the block
  queries attend to [memory segments; FAM_{τ-1}; causal block]; the FAM queries, computed from
  FAM_{τ-1} with the layer's own Q/K/V weights, attend to [FAM_{τ-1}; the whole block τ]; the
  result is added to FAM_{τ-1} (the residual "FAM copy") and passed through the layer's
  feed-forward sublayer, giving FAM_τ for the next block. FAM_{-1} is a learned parameter
  shared over the batch; gradients flow through the whole FAM chain.
- **FM** ablation: like BSWA, but a layer's memory segments hold that layer's *outputs* for the
  previous blocks (projected by its K/V weights), a recurrence over blocks.
- **SUM** ablation: F static learned summary tokens; their queries never change, they attend
  to [keys/values of the previous summary output; the whole block], and the residual adds the
  static tokens, not the previous output (no FAM copy). Past information passes only through
  the previous output's keys/values.

Positions: rotary embeddings (``pos_encoding="rope"``) on queries and keys. FAM_{τ-1} sits at
position τB, the first position of the block that reads it; FAM queries that build FAM_τ sit at
(τ+1)B, just after the block they summarise. All query-key offsets a block sees therefore
repeat from block to block, so BSWA and FAM see the same relative positions at any length.

Sequences whose length is not a multiple of B are padded at the end to whole blocks; padded
positions are never visible to real queries (they lie in the causal future), the FAM update of
the last block masks them out, and their logits are dropped, so the result equals that of the
unpadded sequence.

Efficient exact scheme (:meth:`FAMTransformer.forward`): block tokens' Q/K/V do not depend on
the FAM, so per layer Q/K/V are computed for all blocks at once; only the F-slot FAM update is
scanned block by block; then one batched attention call serves all block queries over
[M shifted blocks | FAM_{τ-1} | causal block] with the static mask of :func:`block_mask`.
:meth:`FAMTransformer.forward_blockwise` is the plain block-by-block form (the reference the
tests compare against, and the only form of the FM ablation, whose memory is recurrent).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from hippo_rep.typed_config import Rule, TypedConfig, choice, setting

#: Attention variants: full causal, BSWA, BSWA + FAM, and the FM and SUM ablations.
VARIANTS = ("full", "bswa", "fam", "fm", "sum")
#: Auxiliary losses :meth:`FAMTransformer.forward` can return.
AUX_LOSSES = ("diversity", "recon")
#: Variants that carry F feedback slots per layer.
FAM_VARIANTS = ("fam", "sum")
#: Positional encodings.
POS_ENCODINGS = ("rope", "none")


class FAMConfigError(ValueError):
    """A TransformerFAM configuration or input that cannot be used."""


_AT_LEAST_1 = Rule(low=1)
_AT_LEAST_0 = Rule(low=0)


@dataclass(frozen=True)
class FAMConfig(TypedConfig):
    section = "model"
    error = FAMConfigError
    # Token vocabulary (PassKey: 36 = 16 filler + 16 key values + 4 specials).
    vocab_size: int = setting(36, _AT_LEAST_1)
    # Width of the residual stream (d = 64 reproduced PassKey in a CPU pilot).
    d_model: int = setting(64, _AT_LEAST_1)
    # Attention heads; d_model must be divisible by it (head width even for rope).
    n_heads: int = setting(4, _AT_LEAST_1)
    # Transformer layers (pre-LN blocks).
    n_layers: int = setting(2, _AT_LEAST_1)
    # Hidden width of the feed-forward sublayer (4 x d_model, as usual).
    d_ff: int = setting(256, _AT_LEAST_1)
    # Attention variant: full | bswa | fam | fm | sum (see the module docstring).
    variant: str = choice("fam", VARIANTS)
    # Block size B in tokens (the paper: 1024; the CPU replication: 16). Unused by "full".
    block_size: int = setting(16, _AT_LEAST_1)
    # Memory segments M: previous blocks each query sees in full (paper: 3; 0 allowed).
    n_mem: int = setting(1, _AT_LEAST_0)
    # FAM slots F per layer for "fam" and "sum" (paper: 64; CPU replication: 4); ignored by
    # full, bswa and fm.
    n_fam: int = setting(4, _AT_LEAST_0)
    # Detach the memory segments' keys/values (fm: outputs), as in Transformer-XL; the paper's
    # BSWA lets gradients flow into them (False).
    mem_stop_grad: bool = False
    # Positional encoding of queries and keys: rope (rotary, relative) | none.
    pos_encoding: str = choice("rope", POS_ENCODINGS)
    # Base of the rotary frequencies.
    rope_base: float = setting(10000.0, Rule(low=1, low_open=True))
    # Std of the normal initialisation of embeddings, projections and the initial FAM.
    init_std: float = setting(0.02, Rule(low=0, low_open=True))

    def check(self) -> None:
        if self.variant in FAM_VARIANTS and self.n_fam < 1:
            raise FAMConfigError(f"model.n_fam must be ≥ 1 for variant {self.variant!r} "
                                 f"(F feedback slots per layer); got {self.n_fam}")
        if self.d_model % self.n_heads:
            raise FAMConfigError(f"model.d_model ({self.d_model}) must be divisible by "
                                 f"model.n_heads ({self.n_heads})")
        if self.pos_encoding == "rope" and (self.d_model // self.n_heads) % 2:
            raise FAMConfigError("model.pos_encoding='rope' needs an even head width "
                                 f"d_model/n_heads; got {self.d_model // self.n_heads}")

    @property
    def slots(self) -> int:
        """F for the variants with feedback slots, else 0."""
        return self.n_fam if self.variant in FAM_VARIANTS else 0

    @property
    def label(self) -> str:
        """The variant with its block length, memory blocks and slots, e.g.
        ``"fam (B=64, M=1, F=4)"``."""
        return f"{self.variant} (B={self.block_size}, M={self.n_mem}, F={self.slots})"


class FAMOutput(NamedTuple):
    #: Next-token logits (batch, length, vocab).
    logits: torch.Tensor
    #: Final FAM per layer (n_layers, batch, F, d_model) for fam/sum, else None.
    state: torch.Tensor | None
    #: Requested auxiliary losses (scalars), e.g. {"diversity": …, "recon": …}.
    aux: dict


def block_mask(n_blocks: int, block_size: int, n_mem: int, n_fam: int,
               device=None) -> torch.Tensor:
    """The static mask of the block queries (True = visible).

    Shape (n_blocks, B, M·B + F + B); the keys of block τ are laid out as
    [blocks τ-M … τ-1 | FAM_{τ-1} (F slots) | block τ]. Memory blocks before the start of the
    sequence are hidden, FAM slots are always visible, the block part is causal.
    """
    t = torch.arange(n_blocks, device=device)[:, None]
    seg = torch.arange(n_mem, device=device)[None, :]
    mem = (t - n_mem + seg >= 0).repeat_interleave(block_size, dim=1)  # (T, M·B)
    mem = mem[:, None, :].expand(n_blocks, block_size, n_mem * block_size)
    fam = torch.ones(n_blocks, block_size, n_fam, dtype=torch.bool, device=device)
    causal = torch.ones(block_size, block_size, dtype=torch.bool, device=device).tril()
    causal = causal.expand(n_blocks, block_size, block_size)
    return torch.cat([mem, fam, causal], dim=-1)


def _rope(x: torch.Tensor, pos: torch.Tensor, base: float) -> torch.Tensor:
    """Rotate the last dim of ``x`` by positions ``pos`` (broadcast against x[..., 0])."""
    half = x.shape[-1] // 2
    inv = base ** (-torch.arange(half, device=x.device, dtype=x.dtype) / half)
    ang = pos.to(x.dtype)[..., None] * inv
    cos, sin = ang.cos(), ang.sin()
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


def _additive(mask: torch.Tensor, dtype) -> torch.Tensor:
    """A boolean mask (True = visible) as an additive one (0 / -inf)."""
    return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(
        ~mask, float("-inf"))


def _attend(q, k, v, mask, probs: bool = False):
    """Softmax attention over the last two dims. ``mask``: None (all visible), boolean (True =
    visible) or additive float (0 / -inf, faster on CPU); every row sees at least one key."""
    if not probs:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask), None
    s = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s + mask
    p = s.softmax(-1)
    return p @ v, p


def _neg_entropy(p: torch.Tensor, weight: torch.Tensor | None = None) -> torch.Tensor:
    """Diversity loss term Σ p̄ log p̄ of the mean attention (Hwang et al. 2024, eq. 2).

    ``p`` (..., H, Lq, K) → p̄ averaged over heads and (weighted) queries → (...,) values.
    """
    if weight is None:
        pbar = p.mean(dim=(-3, -2))
    else:
        w = weight.to(p.dtype)
        pbar = (p * w[:, None]).sum(-2).mean(-2) / w.sum()
    return torch.where(pbar > 0, pbar * pbar.clamp_min(1e-30).log(), pbar.new_zeros(())).sum(-1)


class _Layer(nn.Module):
    """One pre-LN transformer layer; the FAM (if any) shares all its weights."""

    def __init__(self, cfg: FAMConfig):
        super().__init__()
        d = cfg.d_model
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ff = nn.Sequential(nn.Linear(d, cfg.d_ff), nn.GELU(), nn.Linear(cfg.d_ff, d))
        # The learned initial FAM (fam) or the static summary tokens (sum), shared over the
        # batch; for sum it is also the initial "previous output".
        self.fam_init = nn.Parameter(torch.randn(cfg.slots, d) * cfg.init_std) \
            if cfg.slots else None


class FAMTransformer(nn.Module):
    """Decoder-only transformer with full, BSWA, FAM, FM or SUM attention (see module doc).

    ``model(tokens)`` → :class:`FAMOutput`; ``tokens`` is a LongTensor (batch, length).
    """

    #: Token id written into the padding of a last, partial block (its value never matters).
    pad_id = 0

    def __init__(self, cfg: FAMConfig):
        super().__init__()
        if not isinstance(cfg, FAMConfig):
            raise FAMConfigError(f"FAMTransformer needs a FAMConfig; got {type(cfg).__name__}")
        self.cfg = cfg
        self.n_heads = cfg.n_heads
        self.d_head = cfg.d_model // cfg.n_heads
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.layers = nn.ModuleList(_Layer(cfg) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, std=cfg.init_std)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Embedding):
                nn.init.normal_(m.weight, std=cfg.init_std)

    # ----------------------------------------------------------------- helpers
    def initial_state(self, batch: int) -> torch.Tensor | None:
        """The learned initial FAM expanded over a batch: (n_layers, batch, F, d), or None."""
        if not self.cfg.slots:
            return None
        return torch.stack([lay.fam_init for lay in self.layers])[:, None].expand(
            -1, batch, -1, -1)

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        """(..., n, d) → (..., H, n, dh)."""
        *lead, n, _ = x.shape
        return x.view(*lead, n, self.n_heads, self.d_head).transpose(-3, -2)

    def _merge(self, x: torch.Tensor) -> torch.Tensor:
        """(..., H, n, dh) → (..., n, d)."""
        *lead, _, n, _ = x.shape
        return x.transpose(-3, -2).reshape(*lead, n, self.cfg.d_model)

    def _rot(self, x: torch.Tensor, pos) -> torch.Tensor:
        if self.cfg.pos_encoding == "none":
            return x
        pos = torch.as_tensor(pos, device=x.device)
        return _rope(x, pos, self.cfg.rope_base)

    def _qkv(self, lay: _Layer, x: torch.Tensor):
        """Heads of q, k, v from the layer-normed input x (..., n, d)."""
        q, k, v = lay.qkv(lay.ln1(x)).chunk(3, dim=-1)
        return self._split(q), self._split(k), self._split(v)

    @staticmethod
    def _ffn(lay: _Layer, h: torch.Tensor) -> torch.Tensor:
        return h + lay.ff(lay.ln2(h))

    def _check(self, tokens: torch.Tensor, state: torch.Tensor | None, aux) -> tuple:
        if not isinstance(tokens, torch.Tensor) or tokens.dim() != 2 \
                or tokens.dtype not in (torch.int64, torch.int32):
            raise FAMConfigError("tokens must be an integer tensor (batch, length)")
        if tokens.shape[1] < 1:
            raise FAMConfigError("tokens must hold at least one position")
        if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= self.cfg.vocab_size):
            raise FAMConfigError(f"tokens must lie in [0, vocab_size={self.cfg.vocab_size})")
        aux = tuple(aux)
        bad = [a for a in aux if a not in AUX_LOSSES]
        if bad:
            raise FAMConfigError(f"aux: unknown loss(es) {bad}; valid: {AUX_LOSSES}")
        if "recon" in aux and not self.cfg.slots:
            raise FAMConfigError(f"aux 'recon' needs FAM slots; variant {self.cfg.variant!r} "
                                 "has none")
        n = tokens.shape[0]
        if state is None:
            return self.initial_state(n), aux
        if not self.cfg.slots:
            raise FAMConfigError(f"state: variant {self.cfg.variant!r} carries no FAM state")
        want = (self.cfg.n_layers, n, self.cfg.slots, self.cfg.d_model)
        if tuple(state.shape) != want:
            raise FAMConfigError(f"state must have shape {want} (layers, batch, F, d); "
                                 f"got {tuple(state.shape)}")
        return state, aux

    def _pad(self, tokens: torch.Tensor) -> tuple[torch.Tensor, int]:
        B, n = self.cfg.block_size, tokens.shape[1]
        extra = -n % B
        if extra:  # any id would do: real queries never see the padding
            tokens = F.pad(tokens, (0, extra), value=self.pad_id)
        return tokens, n

    # ------------------------------------------------------------ efficient form
    def forward(self, tokens: torch.Tensor, state: torch.Tensor | None = None, *,
                aux=()) -> FAMOutput:
        """Logits for every position (efficient exact scheme; fm uses the blockwise form).

        Parameters
        ----------
        tokens : LongTensor (batch, length)
        state : optional (n_layers, batch, F, d) FAM to start from (fam/sum), e.g. the final
            state of a previous sequence (random state passing); default the learned initial FAM.
        aux : names from :data:`AUX_LOSSES` to compute: ``diversity`` (Hwang et al. 2024, eq. 2,
            negative entropy of the mean attention of block queries and of FAM queries,
            averaged over layers) and ``recon`` (MSE between each block's layer outputs and
            those re-generated from the block's queries attending to [FAM_τ; causal block],
            target detached).
        """
        state, aux = self._check(tokens, state, aux)
        if self.cfg.variant == "fm":
            return self.forward_blockwise(tokens, state, aux=aux)
        if self.cfg.variant == "full":
            return self._forward_full(tokens, aux)
        tokens, n = self._pad(tokens)
        h = self.embed(tokens)
        cfg = self.cfg
        T = tokens.shape[1] // cfg.block_size
        mask = block_mask(T, cfg.block_size, cfg.n_mem, cfg.slots, device=h.device)
        masks = (mask, _additive(mask, h.dtype))  # built once, shared by the layers
        finals, losses = [], {a: [] for a in aux}
        for i, lay in enumerate(self.layers):
            h, fin, ax = self._layer_efficient(lay, h, n, None if state is None else state[i],
                                               aux, masks)
            finals.append(fin)
            for a in aux:
                losses[a].append(ax[a])
        logits = self.head(self.ln_f(h[:, :n]))
        st = torch.stack(finals) if self.cfg.slots else None
        return FAMOutput(logits, st, {a: torch.stack(v).mean() for a, v in losses.items()})

    def _forward_full(self, tokens, aux) -> FAMOutput:
        h = self.embed(tokens)
        L = tokens.shape[1]
        pos = torch.arange(L, device=h.device)
        mask = torch.ones(L, L, dtype=torch.bool, device=h.device).tril()
        div = []
        for lay in self.layers:
            q, k, v = self._qkv(lay, h)
            q, k = self._rot(q, pos), self._rot(k, pos)
            if "diversity" in aux:
                o, p = _attend(q, k, v, mask, probs=True)
                B = self.cfg.block_size  # per block of B queries, as for the other variants
                div.append(torch.stack([_neg_entropy(p[:, :, s:s + B])
                                        for s in range(0, L, B)], 1).mean())
            else:
                o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            h = self._ffn(lay, h + lay.proj(self._merge(o)))
        out = {"diversity": torch.stack(div).mean()} if div else {}
        return FAMOutput(self.head(self.ln_f(h)), None, out)

    def _fam_step(self, lay: _Layer, f_prev, k_blk, v_blk, kmask, t: int, probs: bool):
        """One FAM update for block t: returns (FAM_t, unrotated k, v of f_prev, probs)."""
        B = self.cfg.block_size
        qf, kf, vf = self._qkv(lay, f_prev)
        if self.cfg.variant == "sum":  # static summary queries, no FAM copy
            base = lay.fam_init.expand_as(f_prev)
            qf = self._split(lay.qkv(lay.ln1(lay.fam_init)).chunk(3, dim=-1)[0])
            qf = qf.expand(f_prev.shape[0], -1, -1, -1)
        else:
            base = f_prev
        qr = self._rot(qf, (t + 1) * B)
        keys = torch.cat([self._rot(kf, t * B), k_blk], dim=-2)
        vals = torch.cat([vf, v_blk], dim=-2)
        o, p = _attend(qr, keys, vals, kmask, probs)
        f = base + lay.proj(self._merge(o))
        return self._ffn(lay, f), kf, vf, p

    def _layer_efficient(self, lay: _Layer, h, n_real: int, f0, aux, masks):
        cfg = self.cfg
        B, M, nf = cfg.block_size, cfg.n_mem, cfg.slots
        N, Lp, d = h.shape
        T = Lp // B
        dev = h.device
        pos = torch.arange(Lp, device=dev).view(T, B)
        q, k, v = self._qkv(lay, h.view(N, T, B, d))  # (N, T, H, B, dh)
        q, k, v = (x.transpose(1, 2) for x in (q, k, v))  # (N, H, T, B, dh)
        q, k = self._rot(q, pos), self._rot(k, pos)
        want_p = "diversity" in aux
        out = {}
        # --- the only sequential part: F slots per block
        fam_k = fam_v = None
        final = None
        if nf:
            real = (pos < n_real)  # (T, B)
            kmask = torch.cat([torch.ones(T, nf, dtype=torch.bool, device=dev), real], dim=1)
            f = f0
            ks, vs, fam_div = [], [], []
            for t in range(T):
                # only a last, partial block needs a mask: its padding is hidden
                km = None if (t + 1) * B <= n_real else kmask[t][None, None, None]
                f, kf, vf, p = self._fam_step(lay, f, k[:, :, t], v[:, :, t], km, t, want_p)
                ks.append(kf)
                vs.append(vf)
                if want_p:
                    fam_div.append(_neg_entropy(p))
            final = f
            if "recon" in aux:
                _, kl, vl = self._qkv(lay, f)
                ks.append(kl)
                vs.append(vl)
            fam_k, fam_v = torch.stack(ks, dim=2), torch.stack(vs, dim=2)  # (N,H,T(+1),F,dh)
            fpos = (torch.arange(T, device=dev) * B)[:, None]
            fk_read = self._rot(fam_k[:, :, :T], fpos)
        # --- memory segments: M shifted copies of the blocks' keys/values
        km, vm = (k.detach(), v.detach()) if cfg.mem_stop_grad else (k, v)
        mem_k = [self._shift(km, M - s) for s in range(M)]
        mem_v = [self._shift(vm, M - s) for s in range(M)]
        parts_k = [*mem_k, *([fk_read] if nf else []), k]
        parts_v = [*mem_v, *([fam_v[:, :, :T]] if nf else []), v]
        keys, vals = torch.cat(parts_k, dim=3), torch.cat(parts_v, dim=3)
        mask, additive = masks
        o, p = _attend(q, keys, vals, additive, want_p)  # (N, H, T, B, dh)
        o = o.transpose(1, 2).transpose(-3, -2).reshape(N, Lp, d)
        h2 = h + lay.proj(o)
        h3 = self._ffn(lay, h2)
        if want_p:
            real = pos < n_real
            blk = torch.stack([_neg_entropy(p[:, :, t], real[t]) for t in range(T)
                               if bool(real[t].any())], dim=1).mean()
            out["diversity"] = (blk + torch.stack(fam_div, 1).mean()) / 2 if nf else blk
        if "recon" in aux:
            fk_rec = self._rot(fam_k[:, :, 1:], fpos)
            rmask = torch.cat([torch.ones(T, B, nf, dtype=torch.bool, device=dev),
                               mask[:, :, M * B + nf:]], dim=-1)
            ro, _ = _attend(q, torch.cat([fk_rec, k], 3), torch.cat([fam_v[:, :, 1:], v], 3),
                            rmask)
            rec = self._ffn(lay, h + lay.proj(ro.transpose(1, 2).transpose(-3, -2)
                                              .reshape(N, Lp, d)))
            out["recon"] = (rec[:, :n_real] - h3[:, :n_real].detach()).pow(2).mean()
        return h3, final, out

    @staticmethod
    def _shift(x: torch.Tensor, m: int) -> torch.Tensor:
        """x (N, H, T, B, dh) shifted by m blocks along T (block τ gets τ-m; zeros before 0)."""
        T = x.shape[2]
        if m >= T:
            return torch.zeros_like(x)
        return torch.cat([x.new_zeros(*x.shape[:2], m, *x.shape[3:]), x[:, :, :T - m]], dim=2)

    # ----------------------------------------------------------- blockwise form
    def forward_blockwise(self, tokens: torch.Tensor, state: torch.Tensor | None = None, *,
                          aux=()) -> FAMOutput:
        """The same model computed block by block, every layer per block, with growing caches
        concatenated explicitly (no static mask, no shifted copies). This is how a streaming
        implementation runs; it is the tests' reference, and the only form of "fm".
        For "full" the cache keeps every previous block."""
        state, aux = self._check(tokens, state, aux)
        cfg = self.cfg
        B, M, nf = cfg.block_size, cfg.n_mem, cfg.slots
        tokens, n = self._pad(tokens)
        T = tokens.shape[1] // B
        dev = tokens.device
        emb = self.embed(tokens)
        fams = [None if state is None else state[i] for i in range(cfg.n_layers)]
        caches: list[list] = [[] for _ in range(cfg.n_layers)]  # per layer: per block
        outs, div, rec = [], [], []
        causal = torch.ones(B, B, dtype=torch.bool, device=dev).tril()
        for t in range(T):
            h = emb[:, t * B:(t + 1) * B]
            pos = torch.arange(t * B, (t + 1) * B, device=dev)
            real = pos < n
            for i, lay in enumerate(self.layers):
                q, k, v = self._qkv(lay, h)
                q, k = self._rot(q, pos), self._rot(k, pos)
                past = caches[i] if cfg.variant == "full" else caches[i][max(0, t - M):t] \
                    if M else []
                if cfg.variant == "fm":
                    mk, mv = [], []
                    for (src, hout) in past:
                        hout = hout.detach() if cfg.mem_stop_grad else hout
                        _, a, b = self._qkv(lay, hout)
                        mk.append(self._rot(a, torch.arange(src * B, src * B + B, device=dev)))
                        mv.append(b)
                else:
                    stop = cfg.mem_stop_grad and cfg.variant != "full"
                    mk, mv = ([c[j].detach() if stop else c[j] for c in past] for j in (1, 2))
                f_prev = fams[i]
                if nf:
                    _, kf, vf = self._qkv(lay, f_prev)
                    mk.append(self._rot(kf, t * B))
                    mv.append(vf)
                nk = sum(x.shape[-2] for x in mk)
                keys = torch.cat([*mk, k], dim=-2)
                vals = torch.cat([*mv, v], dim=-2)
                mask = torch.cat([torch.ones(B, nk, dtype=torch.bool, device=dev), causal], 1)
                o, p = _attend(q, keys, vals, mask, "diversity" in aux)
                h_out = self._ffn(lay, h + lay.proj(self._merge(o)))
                blk_div = _neg_entropy(p, real) if p is not None and bool(real.any()) else None
                if nf:
                    # (1, F + B): one row, broadcast over batch, heads and the F queries (a 1-D
                    # mask is not accepted by scaled_dot_product_attention)
                    kmask = torch.cat([torch.ones(nf, dtype=torch.bool, device=dev), real])[None]
                    f_new, _, _, pf = self._fam_step(lay, f_prev, k, v, kmask, t,
                                                     "diversity" in aux)
                    fams[i] = f_new
                    if "recon" in aux:
                        _, kn, vn = self._qkv(lay, f_new)
                        rk = torch.cat([self._rot(kn, t * B), k], dim=-2)
                        rv = torch.cat([vn, v], dim=-2)
                        rm = torch.cat([torch.ones(B, nf, dtype=torch.bool, device=dev),
                                        causal], 1)
                        ro, _ = _attend(q, rk, rv, rm)
                        r = self._ffn(lay, h + lay.proj(self._merge(ro)))
                        rec.append((i, (r - h_out.detach()).pow(2)[:, real]))
                if "diversity" in aux:
                    div.append((i, t, blk_div, _neg_entropy(pf) if nf else None))
                caches[i].append((t, h_out) if cfg.variant == "fm" else (t, k, v))
                h = h_out
            outs.append(h)
        hs = torch.cat(outs, dim=1)[:, :n]
        logits = self.head(self.ln_f(hs))
        out = {}
        if "diversity" in aux:
            per_layer = []
            for i in range(cfg.n_layers):
                blk = torch.stack([d[2] for d in div if d[0] == i and d[2] is not None], 1)
                val = blk.mean()
                if nf:
                    val = (val + torch.stack([d[3] for d in div if d[0] == i], 1).mean()) / 2
                per_layer.append(val)
            out["diversity"] = torch.stack(per_layer).mean()
        if "recon" in aux:
            out["recon"] = torch.stack([torch.cat([r for j, r in rec if j == i], 1).mean()
                                        for i in range(cfg.n_layers)]).mean()
        st = torch.stack(fams) if nf else None
        return FAMOutput(logits, st, out)


def build_fam_model(cfg: FAMConfig, seed: int | None = None) -> FAMTransformer:
    """A :class:`FAMTransformer` initialised from ``torch.manual_seed(seed)`` if given."""
    if seed is not None:
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            return FAMTransformer(cfg)
    return FAMTransformer(cfg)
