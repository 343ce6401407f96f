#pragma once

namespace s1::backend::cpu {

// What this CPU and OS let us run, read once from CPUID/XGETBV on first use.
struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool os_saves_avx = false;  // XCR0 has SSE and AVX (YMM) state enabled
  bool avx_vnni = false;      // VEX-encoded int8 dot products (Alder Lake, Zen 5)
  bool avx512_vnni = false;
  bool amx_int8 = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512_bf16 = false;
  bool amx_tile = false;
  bool amx_bf16 = false;
  bool os_saves_avx512 = false;  // XCR0 has opmask, ZMM_Hi256 and Hi16_ZMM state enabled
  bool os_allows_amx = false;    // XCR0 has XTILECFG/XTILEDATA and the tile permission was granted

  // The AVX2 class: AVX2 + FMA + F16C, OS-enabled (Haswell and later, AMD Zen 1 and later).
  [[nodiscard]] bool avx2_fma() const { return avx2 && fma && f16c && os_saves_avx; }
  [[nodiscard]] bool avx2_with_vnni() const { return avx2_fma() && avx_vnni; }
  // The baseline every AVX-512 variant here needs (AVX-512 F+BW+VL, OS-enabled).
  [[nodiscard]] bool avx512() const { return avx512f && avx512bw && avx512vl && os_saves_avx512; }
  [[nodiscard]] bool avx512_with_bf16() const { return avx512() && avx512_bf16; }
  [[nodiscard]] bool amx_with_bf16() const { return avx512() && amx_tile && amx_bf16 && os_allows_amx; }
  [[nodiscard]] bool avx512_with_vnni() const { return avx512() && avx512_vnni; }
  [[nodiscard]] bool amx_with_int8() const { return avx512() && amx_tile && amx_int8 && os_allows_amx; }
};

// Detected once (thread-safe); also requests AMX tile permission from Linux, once per process, so
// any later tile instruction of ours is legal.
[[nodiscard]] const CpuFeatures& cpu_features();

}  // namespace s1::backend::cpu
