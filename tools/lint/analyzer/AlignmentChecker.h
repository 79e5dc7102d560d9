//===- AlignmentChecker.h - GM003: misaligned vector views ---------------===//
//
// Part of gpumem. gpumem.VectorAlignment reports an explicit cast to a
// pointer to a CUDA vector type (float2, float4, int4, half2, ...) at a byte
// offset the analyzer knows is not a multiple of the vector's alignment. The
// offset is computed from the region the engine built for the pointer:
// constant indexes, sizeof, field offsets, and symbolic indexes whose
// factors prove a multiple (`&As[ty][4 * tx]`). Host and device code are
// both covered: the analyzer analyses __global__ and __device__ bodies of a
// --cuda-host-only compilation as top-level functions.
//
//===----------------------------------------------------------------------===//

#ifndef GPUMEM_ANALYZER_ALIGNMENTCHECKER_H
#define GPUMEM_ANALYZER_ALIGNMENTCHECKER_H

#include "clang/StaticAnalyzer/Core/BugReporter/BugType.h"
#include "clang/StaticAnalyzer/Core/Checker.h"
#include "clang/StaticAnalyzer/Core/PathSensitive/CheckerContext.h"

namespace gpumem {

class AlignmentChecker
    : public clang::ento::Checker<
          clang::ento::check::PostStmt<clang::ExplicitCastExpr>> {
public:
  const clang::ento::BugType Misaligned{this, "Misaligned vector view",
                                        "gpumem alignment"};
  /// gpumem.VectorAlignment:Pedantic: also note views whose alignment
  /// cannot be proven.
  bool Pedantic = false;

  void checkPostStmt(const clang::ExplicitCastExpr *CE,
                     clang::ento::CheckerContext &C) const;
};

} // namespace gpumem

#endif // GPUMEM_ANALYZER_ALIGNMENTCHECKER_H
