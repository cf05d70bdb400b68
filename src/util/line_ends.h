#pragma once
// Finding line ends in a log at memory speed. A line ends at '\n' or '\r' (tqdm and Lightning
// progress bars redraw with '\r' only), and a log is almost always ASCII: one pass finds both
// terminators and notices any non-ASCII byte, so UTF-8 validation runs only where it can fail.
// A memchr per line cost more than the read itself: lines are short, and each call starts
// over. With SSE2 (every x86-64), 64 bytes are compared at once and the terminators are
// walked as bits of a mask; elsewhere a plain loop does the same.
#include <cstddef>
#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace llmwatch {

// Calls on_end(i) for each '\n' or '\r' at data[i], from <= i < to, in order. Returns true
// when a byte in [from, to) has its high bit set (the range is not plain ASCII).
template <class OnEnd>
bool scan_line_ends(const char* data, std::size_t from, std::size_t to, OnEnd&& on_end) {
  std::size_t i = from;
  bool high = false;
#if defined(__SSE2__)
  // Nothing vector-typed lives across on_end(): a call clobbers every xmm register, and a
  // vector kept across it would be spilled and reloaded on every block.
  unsigned high_bits = 0;
  for (; i + 64 <= to; i += 64) {
    const __m128i lf = _mm_set1_epi8('\n'), cr = _mm_set1_epi8('\r');
    auto load = [&](int k) {
      return _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + i + 16 * k));
    };
    auto ends = [&](__m128i v) {
      return static_cast<std::uint64_t>(static_cast<std::uint32_t>(
          _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, lf), _mm_cmpeq_epi8(v, cr)))));
    };
    __m128i v0 = load(0), v1 = load(1), v2 = load(2), v3 = load(3);
    high_bits |= static_cast<unsigned>(
        _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(v0, v1), _mm_or_si128(v2, v3))));
    std::uint64_t mask = ends(v0) | ends(v1) << 16 | ends(v2) << 32 | ends(v3) << 48;
    for (; mask; mask &= mask - 1) on_end(i + static_cast<std::size_t>(__builtin_ctzll(mask)));
  }
  high = high_bits != 0;
#endif
  for (; i < to; ++i) {
    auto c = static_cast<unsigned char>(data[i]);
    high |= c >= 0x80;
    if (c == '\n' || c == '\r') on_end(i);
  }
  return high;
}

}  // namespace llmwatch
