// The fused time loop's per-step work in C++ (hippo_rep.models.fused_cpp): the same aten
// operations, in the same order, as fused._loop_forward's loop and FusedLoop.backward's loop
// for model.memory = "full" (s0 = 0), so the results are those of the Python fused path bit
// for bit; what is once per chunk (setup, weight gradients) stays in Python. Per-operator
// headers only: they compile in a fraction of the time of <torch/extension.h>.
#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/_softmax_backward_data.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/layer_norm.h>
#include <ATen/ops/leaky_relu.h>
#include <ATen/ops/leaky_relu_backward.h>
#include <ATen/ops/linalg_vecdot.h>
#include <ATen/ops/native_layer_norm.h>
#include <ATen/ops/native_layer_norm_backward.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/rsub.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/tanh_backward.h>
#include <ATen/ops/threshold_backward.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

using at::Tensor;

namespace {

constexpr double kLnEps = 1e-5;   // fused._LN_EPS
constexpr double kLeaky = 0.1;    // fused._LEAKY
// Per-step record layout (the fields of fused._Step that the backward reads).
enum Rec {
  G_PREV, H, U, R_PI, G_PI, MEAN_Q, RSTD_Q, ZQ, BSCALE, LOGITS, W, AMAX, X_RAW, HID_R,
  G_RET, R_RET, ZR, MEAN_R, RSTD_R, FEATS, HID_G, SIG, HAS, GATE, DIFF, N_REC
};
// Per-step flags: [has g_prev, landmark, m].
constexpr int64_t N_META = 3;

Tensor activation(int64_t kind, const Tensor& h) {
  if (kind == 1) return h.relu();
  if (kind == 2) return h.tanh();
  if (kind == 3) return at::leaky_relu(h, kLeaky);
  return h;
}

Tensor act_backward(int64_t kind, const Tensor& du, const Tensor& h, const Tensor& u) {
  if (kind == 1) return at::threshold_backward(du, u, 0);
  if (kind == 2) return at::tanh_backward(du, u);
  if (kind == 3) return at::leaky_relu_backward(du, h, kLeaky, false);
  return du;
}

// x (B, 1, k) @ W (k, n) as at::matmul computes it (folded to one mm), without its checks.
Tensor mm3(const Tensor& x, const Tensor& W) {
  return x.reshape({x.size(0), x.size(2)}).mm(W).view({x.size(0), 1, W.size(1)});
}

// at::linear(x, W, b) for contiguous x (B, 1, k), given Wt = W.t(): the addmm it issues.
Tensor lin(const Tensor& x, const Tensor& Wt, const Tensor& b) {
  return b.addmm(x.view({x.size(0), x.size(2)}), Wt).view({x.size(0), 1, Wt.size(1)});
}

// Rows of a float (B, 1, n) tensor whose last dimension is contiguous (views included).
struct Rows {
  const float* p = nullptr;
  int64_t stride = 0;
  explicit Rows(const Tensor& x) : p(x.const_data_ptr<float>()), stride(x.stride(0)) {}
  Rows() = default;
  float at(int64_t b, int64_t i) const { return p[b * stride + i]; }
};

bool rows_ok(const Tensor& x) {
  return x.dim() == 3 && x.size(1) == 1 && (x.size(2) <= 1 || x.stride(2) == 1);
}

// fused._rms: returns u * r and r (norm 2: per rotation plane of two units).
std::pair<Tensor, Tensor> rms(const Tensor& u, const Tensor& k_d, const Tensor& k_eps,
                              int64_t norm) {
  if (norm == 2) {
    Tensor u2 = u.unflatten(-1, {-1, 2});
    Tensor r = u2.mul(u2).sum(-1, true);
    r.div_(2.0).add_(k_eps).rsqrt_();
    return {u2.mul(r).flatten(-2), r};
  }
  Tensor r = u.mul(u).sum(-1, true);
  r.div_(k_d).add_(k_eps).rsqrt_();
  return {u.mul(r), r};
}

// fused._rms_bw
Tensor rms_bw(const Tensor& dy, const Tensor& y, const Tensor& r, double inv_d, int64_t norm) {
  if (norm == 2) {
    Tensor dy2 = dy.unflatten(-1, {-1, 2}), y2 = y.unflatten(-1, {-1, 2});
    Tensor c = dy2.mul(y2).sum(-1, true);
    return dy2.addcmul(y2, c, -0.5).mul(r).flatten(-2);
  }
  Tensor c = dy.mul(y).sum(-1, true);
  return dy.addcmul(y, c, -inv_d).mul(r);
}

// count.max() and count.min() (B,) long: read directly on the CPU (no reduction, no sync).
std::pair<int64_t, int64_t> max_min(const Tensor& count) {
  if (!count.is_cpu()) return {count.max().item<int64_t>(), count.min().item<int64_t>()};
  const int64_t* c = count.const_data_ptr<int64_t>();
  int64_t hi = c[0], lo = c[0];
  for (int64_t i = 1; i < count.numel(); ++i) hi = std::max(hi, c[i]), lo = std::min(lo, c[i]);
  return {hi, lo};
}

Tensor longs(std::vector<int64_t> v, std::vector<int64_t> shape) {
  v.push_back(0);  // never a null pointer
  return at::from_blob(v.data(), shape, at::kLong).clone();
}

// fused._loop_forward's loop. Returns [g, g_pi, gate (B, L, d), written (B, L), slots
// (B, L), count (B,), meta (L, N_META), then N_REC tensors per step when save].
std::vector<Tensor> loop_forward(
    const Tensor& Wcat, const Tensor& g_start, const Tensor& aidx, const Tensor& obs_t,
    const Tensor& ctx_t, const Tensor& G, const Tensor& ZG, const Tensor& X, const Tensor& C,
    const Tensor& count_in, const Tensor& flat, const Tensor& W1r, const Tensor& b1r,
    const Tensor& W2r, const Tensor& b2r, const Tensor& W1g, const Tensor& b1g,
    const Tensor& W2g, const Tensor& b2g, const Tensor& beta_tab, const Tensor& has_tab,
    const Tensor& thr_d, const Tensor& k_d, const Tensor& k_eps, int64_t act_kind, int64_t norm,
    bool multiplicative, bool landmark, bool use_c, bool fresh, bool save) {
  // Below autograd: it runs under no_grad (FusedLoop.forward, or without a graph), and each
  // operation then skips the autograd and view/version-tracking kernels. The buffers it
  // writes are fresh copies (MemoryState.grow) that no saved tensor holds.
  at::AutoDispatchBelowADInplaceOrView below_autograd;
  const int64_t B = G.size(0), cap = G.size(1), d = G.size(2), L = obs_t.size(0);
  const bool pow2 = (d & (d - 1)) == 0;
  const std::vector<int64_t> nd{d};
  Tensor count = count_in;
  auto obs_b = obs_t.unbind(0), obs_k = obs_t.view({L, B, 1, 1}).unbind(0);
  auto aidx_t = aidx.unbind(0);
  std::vector<Tensor> ctx_b, ctx_k;
  if (use_c) ctx_b = ctx_t.unbind(0), ctx_k = ctx_t.view({L, B, 1, 1}).unbind(0);
  Tensor ZG3T = ZG.transpose(1, 2), X3 = X.view({B, 1, cap}), C3 = C.view({B, 1, cap});
  Tensor Gf = G.view({B * cap, 1, d}), ZGf = ZG.view({B * cap, 1, d});
  Tensor Xf = X.view({-1}), Cf = C.view({-1});
  Tensor ones = at::ones({B}, G.options().dtype(at::kBool));
  Tensor zero_gate = at::zeros({B, 1, d}, G.options());
  Tensor none = G.new_empty({0});  // an unused record (Tensor[] holds no None)
  Tensor g_prev = g_start.contiguous().view({B, 1, d});
  Tensor W1rT = W1r.t(), W2rT = W2r.t(), W1gT = W1g.t(), W2gT = W2g.t();
  std::vector<Tensor> gs, gpis, gates, news, fis, recs;
  std::vector<int64_t> meta;
  gs.reserve(L), gpis.reserve(L), gates.reserve(L), news.reserve(L), fis.reserve(L);
  if (save) recs.reserve(L * N_REC);
  // What every step keeps, whichever way it wrote its memory row.
  auto end_step = [&](const Tensor& g_t, const Tensor& g_pi, const Tensor& gate,
                      std::vector<Tensor>& rec, bool has_prev, bool lm, int64_t m) {
    gs.push_back(g_t);
    gpis.push_back(g_pi);
    gates.push_back(gate);
    meta.insert(meta.end(), {has_prev ? 1 : 0, lm ? 1 : 0, m});
    if (save)
      for (auto& r : rec) recs.push_back(r.defined() ? std::move(r) : none);
    g_prev = g_t;
  };
  bool all_has = false;
  int64_t m_views = -1;
  Tensor ZGt, Gs, Xs, Cs;
  // "hand": the float32 CPU case of the presets (multiplicative conjunction). Integer
  // comparisons, copies, maxima and single float products, sums and differences are done
  // by hand in place of the aten operations that issue them one by one; every value is the
  // same float operation on the same operands (no reduction is reordered; built with
  // -ffp-contract=off), so the results are bit for bit those of the aten path.
  const bool hand = G.is_cpu() && G.scalar_type() == at::kFloat && multiplicative &&
                    G.is_contiguous() && ZG.is_contiguous() && X.is_contiguous() &&
                    C.is_contiguous() && obs_t.is_contiguous() && ctx_t.is_contiguous() &&
                    count.is_contiguous() && (!landmark || beta_tab.is_contiguous());
  Tensor written_all, fis_all;
  std::vector<uint8_t> eqv, inv;
  float thr = 0;
  if (hand) {
    written_all = at::empty({B, L}, G.options().dtype(at::kBool));
    fis_all = at::empty({B, L}, G.options().dtype(at::kLong));
    thr = thr_d.item<float>();
  }
  for (int64_t t = 0; t < L; ++t) {
    std::vector<Tensor> rec(save ? N_REC : 0);
    Tensor g_pi, eq, invalid;
    const bool has_prev = !(fresh && t == 0);
    if (!has_prev) {
      g_pi = g_prev;
    } else {
      Tensor h = mm3(g_prev, Wcat).gather(2, aidx_t[t]);
      Tensor u = activation(act_kind, h), r_pi;
      if (norm) {
        std::tie(g_pi, r_pi) = rms(u, k_d, k_eps, norm);
      } else {
        g_pi = u;
      }
      if (save) rec[G_PREV] = g_prev, rec[H] = h, rec[U] = u, rec[R_PI] = r_pi;
    }
    if (save) rec[G_PI] = g_pi;
    const auto [m, m_min] = max_min(count);
    if (m > 0) {
      if (m != m_views) {
        ZGt = ZG3T.slice(2, 0, m), Gs = G.slice(1, 0, m), Xs = X3.slice(2, 0, m);
        if (use_c) Cs = C3.slice(2, 0, m);
        m_views = m;
      }
      if (hand) {  // eq: same observation (and context); inv: no memory (X < 0)
        eqv.resize(B * m), inv.resize(B * m);
        const int64_t *x = X.const_data_ptr<int64_t>(), *o = obs_t.const_data_ptr<int64_t>() + t * B;
        const int64_t *c = C.const_data_ptr<int64_t>(), *k = ctx_t.const_data_ptr<int64_t>() + t * B;
        for (int64_t b = 0; b < B; ++b)
          for (int64_t j = 0; j < m; ++j) {
            const int64_t xv = x[b * cap + j];
            eqv[b * m + j] = xv == o[b] && (!use_c || c[b * cap + j] == k[b]);
            inv[b * m + j] = xv < 0;
          }
      } else {
        eq = Xs.eq(obs_k[t]);
        if (use_c) eq = eq.logical_and_(Cs.eq(ctx_k[t]));
        invalid = Xs.lt(0);
      }
    }
    Tensor g_t, gate;
    const bool lm = landmark && m > 0;
    if (lm) {
      const Tensor& n_vis = count;
      auto [zq, mean_q, rstd_q] = at::native_layer_norm(g_pi, nd, {}, {}, kLnEps);
      Tensor s = zq.bmm(ZGt), bscale, logits;
      if (hand) {  // index_select, mul by eq, mul by the similarity, masked_fill_
        Tensor sd = (pow2 ? s : s.div(k_d)).contiguous();
        bscale = at::empty({B, 1, m}, s.options()), logits = at::empty({B, 1, m}, s.options());
        const float *sp = sd.const_data_ptr<float>(), *bt = beta_tab.const_data_ptr<float>();
        const int64_t* cn = count.const_data_ptr<int64_t>();
        float *bp = bscale.mutable_data_ptr<float>(), *lp = logits.mutable_data_ptr<float>();
        const float fill = static_cast<float>(-1e30);
        for (int64_t b = 0; b < B; ++b) {
          const float beta = bt[cn[b]];
          for (int64_t j = 0; j < m; ++j) {
            const int64_t i = b * m + j;
            const float bs = beta * (eqv[i] ? 1.0f : 0.0f);
            const float l = sp[i] * bs;
            bp[i] = bs;
            lp[i] = inv[i] ? fill : l;
          }
        }
      } else if (multiplicative) {
        bscale = beta_tab.index_select(0, n_vis).mul(eq);
        logits = (pow2 ? s : s.div(k_d)).mul(bscale);
      } else {
        bscale = beta_tab.index_select(0, n_vis);
        logits = bscale.mul(s.div(k_d).add(eq));
      }
      if (!hand) logits.masked_fill_(invalid, -1e30);
      Tensor w = logits.softmax(-1);
      Tensor x_raw = w.bmm(Gs);
      auto [conf, amax] = w.max(-1, true);
      Tensor hid_r = lin(x_raw, W1rT, b1r).relu_();
      Tensor v = x_raw.add(lin(hid_r, W2rT, b2r));
      Tensor g_ret, r_ret;
      if (norm) {
        std::tie(g_ret, r_ret) = rms(v, k_d, k_eps, norm);
      } else {
        g_ret = v;
      }
      auto [zr, mean_r, rstd_r] = at::native_layer_norm(x_raw, nd, {}, {}, kLnEps);
      Tensor agree = zr.mul(zq).sum(-1, true);
      if (!pow2) agree = agree.div(k_d);
      Tensor feats = at::cat({g_ret, g_pi, agree, conf}, -1);
      Tensor hid_g = lin(feats, W1gT, b1g).relu_();
      Tensor sig = lin(hid_g, W2gT, b2g).sigmoid();
      if (!all_has) all_has = m_min > 0;
      Tensor has;
      if (!all_has) has = has_tab.index_select(0, n_vis);
      gate = has.defined() ? sig.mul(has) : sig;
      Tensor diff;
      if (hand) {  // diff = g_ret - g_pi; g_t = g_pi + gate * diff
        Tensor gr = g_ret.contiguous(), gp = g_pi.contiguous(), ga = gate.contiguous();
        diff = at::empty_like(gp), g_t = at::empty_like(gp);
        const float *a = gr.const_data_ptr<float>(), *p = gp.const_data_ptr<float>(),
                    *q = ga.const_data_ptr<float>();
        float *df = diff.mutable_data_ptr<float>(), *o = g_t.mutable_data_ptr<float>();
        for (int64_t i = 0, n = gp.numel(); i < n; ++i) {
          const float dv = a[i] - p[i];
          const float gd = q[i] * dv;
          df[i] = dv;
          o[i] = p[i] + gd;
        }
      } else {
        diff = g_ret.sub(g_pi);
        g_t = g_pi.add(gate.mul(diff));
      }
      if (save) {
        rec[MEAN_Q] = mean_q, rec[RSTD_Q] = rstd_q, rec[ZQ] = zq, rec[BSCALE] = bscale;
        rec[LOGITS] = logits, rec[W] = w, rec[AMAX] = amax, rec[X_RAW] = x_raw;
        rec[HID_R] = hid_r, rec[G_RET] = g_ret, rec[R_RET] = r_ret, rec[ZR] = zr;
        rec[MEAN_R] = mean_r, rec[RSTD_R] = rstd_r, rec[FEATS] = feats, rec[HID_G] = hid_g;
        rec[SIG] = sig, rec[HAS] = has, rec[GATE] = gate, rec[DIFF] = diff;
      }
    } else {
      g_t = g_pi;
      gate = zero_gate;
    }
    // add-if-novel: the row goes into the next free slot unconditionally (fused.py)
    Tensor zt = at::layer_norm(g_t, nd);
    if (hand) {  // the write decision (amax of the same-x similarities <= threshold), writes
      const float* st = nullptr;
      Tensor s_t;
      if (m > 0) {
        s_t = zt.bmm(ZGt);
        if (!pow2) s_t = s_t.div(k_d);
        s_t = s_t.contiguous();
        st = s_t.const_data_ptr<float>();
      }
      Tensor gc = g_t.contiguous(), zc = zt.contiguous();
      const float *gv = gc.const_data_ptr<float>(), *zv = zc.const_data_ptr<float>();
      float *Gp = G.mutable_data_ptr<float>(), *Zp = ZG.mutable_data_ptr<float>();
      int64_t *Xp = X.mutable_data_ptr<int64_t>(), *Cp = C.mutable_data_ptr<int64_t>();
      int64_t* cn = count.mutable_data_ptr<int64_t>();
      const int64_t *o = obs_t.const_data_ptr<int64_t>() + t * B;
      const int64_t *k = ctx_t.const_data_ptr<int64_t>() + t * B;
      bool* wr = written_all.mutable_data_ptr<bool>();
      int64_t* fp = fis_all.mutable_data_ptr<int64_t>();
      for (int64_t b = 0; b < B; ++b) {
        bool nwb = true;
        if (m > 0) {
          float mx = -std::numeric_limits<float>::infinity();
          for (int64_t j = 0; j < m; ++j) {
            if (!eqv[b * m + j]) continue;
            const float v = st[b * m + j];
            if (std::isnan(v)) { mx = v; break; }
            mx = std::max(mx, v);
          }
          nwb = mx <= thr;
        }
        const int64_t fi = b * cap + cn[b];
        std::copy(gv + b * d, gv + (b + 1) * d, Gp + fi * d);
        std::copy(zv + b * d, zv + (b + 1) * d, Zp + fi * d);
        Xp[fi] = nwb ? o[b] : -1;
        if (use_c) Cp[fi] = k[b];
        wr[b * L + t] = nwb;
        fp[b * L + t] = fi;
        cn[b] += nwb;
      }
      end_step(g_t, g_pi, gate, rec, has_prev, lm, m);
      continue;
    }
    Tensor nw;
    if (m > 0) {
      Tensor s_t = zt.bmm(ZGt);
      if (!pow2) s_t = s_t.div(k_d);
      nw = at::where(eq, s_t, -std::numeric_limits<double>::infinity()).amax({1, 2}).le(thr_d);
    } else {
      nw = ones;
    }
    Tensor fi = flat.add(count);
    Gf.index_copy_(0, fi, g_t);
    ZGf.index_copy_(0, fi, zt);
    Xf.index_copy_(0, fi, at::where(nw, obs_b[t], -1));
    if (use_c) Cf.index_copy_(0, fi, ctx_b[t]);
    count.add_(nw);
    news.push_back(nw);
    fis.push_back(fi);
    end_step(g_t, g_pi, gate, rec, has_prev, lm, m);
  }
  std::vector<Tensor> out{at::cat(gs, 1), at::cat(gpis, 1), at::cat(gates, 1),
                          hand ? written_all : at::stack(news, 1),
                          hand ? fis_all : at::stack(fis, 1), count,
                          longs(meta, {L, N_META})};
  if (save) {
    // has·σ'(s) of every landmark step, as fused._loop_forward makes it after the loop
    std::vector<Tensor> sigs, hases;
    bool any_has = false;
    for (int64_t t = 0; t < L; ++t) {
      if (!meta[t * N_META + 1]) continue;
      sigs.push_back(recs[t * N_REC + SIG]);
      any_has = any_has || recs[t * N_REC + HAS].numel() > 0;
    }
    if (!sigs.empty()) {
      Tensor sig = at::stack(sigs);
      Tensor dsig = sig.mul(at::rsub(sig, 1));
      if (any_has) {
        Tensor one = has_tab.select(0, 1).expand({B, 1, 1});
        for (int64_t t = 0; t < L; ++t)
          if (meta[t * N_META + 1]) {
            const Tensor& h = recs[t * N_REC + HAS];
            hases.push_back(h.numel() > 0 ? h : one);
          }
        dsig = dsig.mul(at::stack(hases));
      }
      auto ds = dsig.unbind(0);
      int64_t k = 0;
      for (int64_t t = 0; t < L; ++t)
        if (meta[t * N_META + 1]) recs[t * N_REC + SIG] = ds[k++];  // SIG now holds dsig
    }
    out.insert(out.end(), recs.begin(), recs.end());
  }
  return out;
}

// Empty lists come back as 0-element tensors (Tensor[] holds no None).
Tensor cat_or_empty(const std::vector<Tensor>& v, const Tensor& none) {
  return v.empty() ? none : at::cat(v);
}

// FusedLoop.backward's loop over reverse time. ``recs``/``meta`` as loop_forward returns
// them; grads (B, L, d) or None. Returns [d_start (B, 1, d) or None, transition inputs,
// their output gradients, their steps (long), gate MLP (inputs, hidden, d out, d hidden),
// retrieval MLP (the same), rbeta rows] with the per-step rows concatenated in reverse time.
std::vector<Tensor> loop_backward(
    at::TensorList recs, const Tensor& meta_t, const std::optional<Tensor>& grad_g,
    const std::optional<Tensor>& grad_gpi, const std::optional<Tensor>& grad_gate,
    const Tensor& WTcat, const Tensor& aidx, const Tensor& W2g, const Tensor& W1g_s,
    const Tensor& W2r, const Tensor& W1r, const Tensor& G, const Tensor& ZG, const Tensor& k_d,
    int64_t act_kind, int64_t norm, bool multiplicative) {
  at::AutoDispatchBelowADInplaceOrView below_autograd;  // FusedLoop.backward: no graph
  const int64_t d = G.size(2), L = meta_t.size(0);
  const bool pow2 = (d & (d - 1)) == 0;
  const double inv_d = 1.0 / static_cast<double>(d);
  const std::vector<int64_t> nd{d};
  const std::vector<int64_t> split{d, d, 1, 1};
  const int64_t* meta = meta_t.data_ptr<int64_t>();
  auto per_step = [](const std::optional<Tensor>& gr) {
    return gr.has_value() && gr->defined() ? gr->unsqueeze(2).unbind(1) : std::vector<Tensor>();
  };
  auto gg = per_step(grad_g), ggpi = per_step(grad_gpi), ggate = per_step(grad_gate);
  Tensor GT = G.transpose(1, 2);
  auto aidx_t = aidx.unbind(0);
  Tensor carry, d_start, GsT, ZGs;
  std::vector<Tensor> rb_rows, tr_in, tr_dh, gate_in, gate_hid, gate_ds, gate_dpre, ret_in,
      ret_hid, ret_dv, ret_dpre;
  std::vector<int64_t> tr_t;
  int64_t m_views = -1;
  bool have_start = false;
  // "hand" (float32 on the CPU): the gate's elementwise gradients by hand, the same float
  // operations in the same order as the aten calls they replace (see loop_forward).
  const bool hand = G.is_cpu() && G.scalar_type() == at::kFloat;
  for (int64_t t = L - 1; t >= 0; --t) {
    auto rec = [&](int i) -> const Tensor& { return recs[t * N_REC + i]; };
    const bool lm = meta[t * N_META + 1];
    const bool hand_t = hand && lm && rows_ok(rec(DIFF)) && rows_ok(rec(GATE)) &&
                        rows_ok(rec(SIG)) && (gg.empty() || rows_ok(gg[t])) &&
                        (!carry.defined() || rows_ok(carry)) &&
                        (ggate.empty() || rows_ok(ggate[t]));
    Tensor dg;
    if (!hand_t) dg = gg.empty() ? carry : (carry.defined() ? gg[t].add(carry) : gg[t]);
    Tensor dpi;
    if (lm) {
      Tensor dret, ds;
      if (hand_t) {
        // dg = gg + carry; dgate = dg * diff (+ ggate); dret = dg * gate; dpi = dg - dret;
        // ds = dgate * dsig
        const int64_t B = rec(G_PI).size(0);
        dret = at::empty({B, 1, d}, G.options()), dpi = at::empty({B, 1, d}, G.options());
        ds = at::empty({B, 1, d}, G.options());
        Rows r_gg, r_ca, r_ggate;
        const bool has_gg = !gg.empty(), has_ca = carry.defined(), has_ggate = !ggate.empty();
        if (has_gg) r_gg = Rows(gg[t]);
        if (has_ca) r_ca = Rows(carry);
        if (has_ggate) r_ggate = Rows(ggate[t]);
        Rows r_diff(rec(DIFF)), r_gate(rec(GATE)), r_sig(rec(SIG));
        float *o_ret = dret.mutable_data_ptr<float>(), *o_pi = dpi.mutable_data_ptr<float>(),
              *o_ds = ds.mutable_data_ptr<float>();
        for (int64_t b = 0; b < B; ++b)
          for (int64_t i = 0; i < d; ++i) {
            float a = 0.0f;
            if (has_gg && has_ca) a = r_gg.at(b, i) + r_ca.at(b, i);
            else if (has_gg) a = r_gg.at(b, i);
            else if (has_ca) a = r_ca.at(b, i);
            float dgt = a * r_diff.at(b, i);
            if (has_ggate) dgt = dgt + r_ggate.at(b, i);
            const float dr = a * r_gate.at(b, i);
            const float dp = a - dr;
            o_ret[b * d + i] = dr;
            o_pi[b * d + i] = dp;
            o_ds[b * d + i] = dgt * r_sig.at(b, i);
          }
      } else {
        if (!dg.defined()) dg = at::zeros_like(rec(G_PI));
        Tensor dgate = dg.mul(rec(DIFF));
        if (!ggate.empty()) dgate = dgate.add(ggate[t]);
        dret = dg.mul(rec(GATE));
        dpi = dg.sub(dret);
        ds = dgate.mul(rec(SIG));  // SIG holds has·σ'
      }
      Tensor dpre_g = at::threshold_backward(mm3(ds, W2g), rec(HID_G), 0);
      auto parts = mm3(dpre_g, W1g_s).split_with_sizes(split, -1);
      const Tensor &df_ret = parts[0], &df_pi = parts[1], &dagree = parts[2],
                   &dconf = parts[3];
      gate_in.push_back(rec(FEATS));
      gate_hid.push_back(rec(HID_G));
      gate_ds.push_back(ds);
      gate_dpre.push_back(dpre_g);
      if (hand_t) {  // dret += df_ret; dpi += df_pi (both fresh: in place is the same add)
        Rows r_fr(df_ret), r_fp(df_pi);
        float *o_ret = dret.mutable_data_ptr<float>(), *o_pi = dpi.mutable_data_ptr<float>();
        for (int64_t b = 0, B = dret.size(0); b < B; ++b)
          for (int64_t i = 0; i < d; ++i) {
            o_ret[b * d + i] = o_ret[b * d + i] + r_fr.at(b, i);
            o_pi[b * d + i] = o_pi[b * d + i] + r_fp.at(b, i);
          }
      } else {
        dret = dret.add(df_ret);
        dpi = dpi.add(df_pi);
      }
      Tensor dv = norm ? rms_bw(dret, rec(G_RET), rec(R_RET), inv_d, norm) : dret;
      Tensor dpre_r = at::threshold_backward(mm3(dv, W2r), rec(HID_R), 0);
      ret_in.push_back(rec(X_RAW));
      ret_hid.push_back(rec(HID_R));
      ret_dv.push_back(dv);
      ret_dpre.push_back(dpre_r);
      Tensor dx = dv.add(mm3(dpre_r, W1r));
      Tensor dzr = pow2 ? dagree.mul(rec(ZQ)) : dagree.mul(rec(ZQ)).div(k_d);
      dx = dx.add(std::get<0>(at::native_layer_norm_backward(
          dzr, rec(X_RAW), nd, rec(MEAN_R), rec(RSTD_R), {}, {}, {true, false, false})));
      const int64_t m = meta[t * N_META + 2];
      if (m != m_views) GsT = GT.slice(2, 0, m), ZGs = ZG.slice(1, 0, m), m_views = m;
      Tensor dw = dx.bmm(GsT);
      dw.scatter_add_(2, rec(AMAX), dconf);
      Tensor dlogit = at::_softmax_backward_data(dw, rec(W), -1, dw.scalar_type());
      rb_rows.push_back(at::linalg_vecdot(dlogit, rec(LOGITS)));
      Tensor dzq;
      if (pow2) {
        Tensor dsim = multiplicative ? dlogit.mul(rec(BSCALE))
                                     : dlogit.mul(rec(BSCALE).mul(inv_d));
        dzq = dagree.mul(rec(ZR)).baddbmm(dsim, ZGs);
      } else {
        dzq = dagree.mul(rec(ZR)).baddbmm(dlogit.mul(rec(BSCALE)), ZGs).div(k_d);
      }
      dpi = dpi.add(std::get<0>(at::native_layer_norm_backward(
          dzq, rec(G_PI), nd, rec(MEAN_Q), rec(RSTD_Q), {}, {}, {true, false, false})));
    } else {
      dpi = dg;
    }
    if (!ggpi.empty()) dpi = dpi.defined() ? dpi.add(ggpi[t]) : ggpi[t];
    if (!meta[t * N_META]) {  // step 0 of a fresh walk: g_pi is g_start
      d_start = dpi;
      have_start = true;
      carry = Tensor();
      continue;
    }
    if (!dpi.defined()) dpi = at::zeros_like(rec(G_PI));
    Tensor du = norm ? rms_bw(dpi, rec(G_PI), rec(R_PI), inv_d, norm) : dpi;
    Tensor dh = act_backward(act_kind, du, rec(H), rec(U));
    tr_in.push_back(rec(G_PREV));
    tr_dh.push_back(dh);
    tr_t.push_back(t);
    carry = mm3(dh, WTcat).gather(2, aidx_t[t]);
  }
  if (!have_start) d_start = carry;
  Tensor none = G.new_empty({0});
  auto c = [&](const std::vector<Tensor>& v) { return cat_or_empty(v, none); };
  return {d_start.defined() ? d_start : none, c(tr_in), c(tr_dh),
          longs(tr_t, {static_cast<int64_t>(tr_t.size())}), c(gate_in), c(gate_hid),
          c(gate_ds), c(gate_dpre), c(ret_in), c(ret_hid), c(ret_dv), c(ret_dpre),
          rb_rows.empty() ? none : at::stack(rb_rows)};
}

}  // namespace

TORCH_LIBRARY(hippo_fused, m) {
  m.def("loop_forward", &loop_forward);
  m.def("loop_backward", &loop_backward);
}
