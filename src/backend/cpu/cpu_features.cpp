#include "backend/cpu/cpu_features.h"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace s1::backend::cpu {
namespace {

constexpr int arch_get_xcomp_perm = 0x1022;
constexpr int arch_req_xcomp_perm = 0x1023;
constexpr int xfeature_xtiledata = 18;

struct CpuidRegisters {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

CpuidRegisters cpuid(unsigned leaf, unsigned subleaf) {
  CpuidRegisters r;
  __cpuid_count(leaf, subleaf, r.eax, r.ebx, r.ecx, r.edx);
  return r;
}

std::uint64_t read_xcr0() {
  std::uint32_t low = 0, high = 0;
  __asm__ volatile("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
  return (std::uint64_t{high} << 32) | low;
}

bool bit(unsigned value, int index) { return ((value >> index) & 1U) != 0; }

// Linux keeps AMX tile data disabled until a process asks for it (kernel 5.16+); without the
// request the first tile load faults with SIGILL.
bool request_amx_permission() {
  if (syscall(SYS_arch_prctl, arch_req_xcomp_perm, xfeature_xtiledata) != 0) return false;
  unsigned long permitted = 0;
  if (syscall(SYS_arch_prctl, arch_get_xcomp_perm, &permitted) != 0) return false;
  return ((permitted >> xfeature_xtiledata) & 1UL) != 0;
}

CpuFeatures detect() {
  CpuFeatures f;
  const unsigned max_leaf = cpuid(0, 0).eax;
  if (max_leaf < 7) return f;
  const CpuidRegisters leaf1 = cpuid(1, 0);
  const bool osxsave = bit(leaf1.ecx, 27);
  if (!osxsave) return f;
  const std::uint64_t xcr0 = read_xcr0();
  constexpr std::uint64_t avx_state = (1U << 1) | (1U << 2);
  constexpr std::uint64_t avx512_state = (1U << 1) | (1U << 2) | (1U << 5) | (1U << 6) | (1U << 7);
  constexpr std::uint64_t amx_state = (1U << 17) | (1U << 18);
  f.os_saves_avx = (xcr0 & avx_state) == avx_state;
  f.os_saves_avx512 = (xcr0 & avx512_state) == avx512_state;
  f.fma = bit(leaf1.ecx, 12);
  f.f16c = bit(leaf1.ecx, 29);

  const CpuidRegisters leaf7 = cpuid(7, 0);
  f.avx2 = bit(leaf7.ebx, 5);
  f.avx512f = bit(leaf7.ebx, 16);
  f.avx512bw = bit(leaf7.ebx, 30);
  f.avx512vl = bit(leaf7.ebx, 31);
  f.avx512_vnni = bit(leaf7.ecx, 11);
  f.amx_int8 = bit(leaf7.edx, 25);
  f.amx_bf16 = bit(leaf7.edx, 22);
  f.amx_tile = bit(leaf7.edx, 24);
  if (leaf7.eax >= 1) {
    const CpuidRegisters leaf7_1 = cpuid(7, 1);
    f.avx512_bf16 = bit(leaf7_1.eax, 5);
    f.avx_vnni = bit(leaf7_1.eax, 4);
  }
  f.os_allows_amx = f.amx_tile && (xcr0 & amx_state) == amx_state && request_amx_permission();
  return f;
}

// S1SERVE_CPU_ISA caps what the variants may use, so that every CPU class's path (AVX2-only, AVX-512
// without BF16 …) can be run and tested on a machine that has more. It only removes features.
// avx512 is the AVX-512 class without BF16 but with VNNI (Cascade Lake); avx2 and avx_vnni are the
// AVX2-only classes without and with VEX int8 dot products.
CpuFeatures capped(CpuFeatures f) {
  const char* setting = std::getenv("S1SERVE_CPU_ISA");
  if (setting == nullptr || *setting == '\0') return f;
  const std::string_view cap = setting;
  const auto no_avx512 = [&] { f.avx512f = f.avx512bw = f.avx512vl = f.avx512_bf16 = f.avx512_vnni = false; };
  const auto no_amx = [&] { f.amx_tile = f.amx_bf16 = f.amx_int8 = false; };
  if (cap == "portable") {
    no_avx512();
    no_amx();
    f.avx2 = f.fma = f.f16c = f.avx_vnni = false;
  } else if (cap == "avx2" || cap == "avx_vnni") {
    no_avx512();
    no_amx();
    f.avx_vnni = f.avx_vnni && cap == "avx_vnni";
  } else if (cap == "avx512") {
    f.avx512_bf16 = false;
    no_amx();
  } else if (cap == "avx512_bf16") {
    no_amx();
  } else if (cap != "amx_bf16") {
    // Start-up configuration is strict (DESIGN.md section 4): a misspelt cap must not run silently.
    std::fprintf(stderr, "S1SERVE_CPU_ISA=%s: expected portable, avx2, avx_vnni, avx512, avx512_bf16 or amx_bf16\n",
                 setting);
    std::exit(2);
  }
  return f;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = capped(detect());
  return features;
}

}  // namespace s1::backend::cpu
