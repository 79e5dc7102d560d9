//===- NoteVisitor.h - "allocated here" and "released here" notes -------===//
//
// Part of gpumem.
//
//===----------------------------------------------------------------------===//

#ifndef GPUMEM_ANALYZER_NOTEVISITOR_H
#define GPUMEM_ANALYZER_NOTEVISITOR_H

#include "MemoryState.h"
#include "clang/StaticAnalyzer/Core/BugReporter/BugReporterVisitors.h"

namespace gpumem {

/// Walks a report's path and notes where the memory of \p Sym was allocated
/// ("allocated here with cudaMallocHost") and released ("released here with
/// cudaFree"), at the calls as the user wrote them.
class NoteVisitor final : public clang::ento::BugReporterVisitor {
  clang::ento::SymbolRef Sym;
  /// For leaks: where the warning goes (the allocation or the early exit),
  /// which is not where the engine found the memory unreachable.
  const clang::Stmt *EndAt;
  const clang::LocationContext *EndContext;

public:
  explicit NoteVisitor(clang::ento::SymbolRef Sym,
                       const clang::Stmt *EndAt = nullptr,
                       const clang::LocationContext *EndContext = nullptr)
      : Sym(Sym), EndAt(EndAt), EndContext(EndContext) {}

  clang::ento::PathDiagnosticPieceRef
  getEndPath(clang::ento::BugReporterContext &BRC,
             const clang::ento::ExplodedNode *N,
             clang::ento::PathSensitiveBugReport &BR) override;

  void Profile(llvm::FoldingSetNodeID &ID) const override;
  clang::ento::PathDiagnosticPieceRef
  VisitNode(const clang::ento::ExplodedNode *N,
            clang::ento::BugReporterContext &BRC,
            clang::ento::PathSensitiveBugReport &BR) override;
};

} // namespace gpumem

#endif // GPUMEM_ANALYZER_NOTEVISITOR_H
