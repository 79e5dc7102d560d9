//===- StatusChecker.h - GM004: CUDA statuses nobody looks at ------------===//
//
// Part of gpumem. gpumem.UncheckedStatus reports a cudaError_t or CUresult
// that is discarded, one stored in a variable that is not read before the
// next CUDA call (or ever), and a kernel launch whose error state is not
// read (cudaGetLastError, cudaPeekAtLastError or a LaunchChecks call) before
// the next CUDA call. A launch still unchecked when the analysed top-level
// function returns is left to its callers.
//
//===----------------------------------------------------------------------===//

#ifndef GPUMEM_ANALYZER_STATUSCHECKER_H
#define GPUMEM_ANALYZER_STATUSCHECKER_H

#include "clang/StaticAnalyzer/Core/BugReporter/BugType.h"
#include "clang/StaticAnalyzer/Core/Checker.h"
#include "clang/StaticAnalyzer/Core/PathSensitive/CheckerContext.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"

namespace gpumem {

class StatusChecker
    : public clang::ento::Checker<
          clang::ento::check::PreCall, clang::ento::check::PostCall,
          clang::ento::check::Bind, clang::ento::check::Location,
          clang::ento::check::EndFunction> {
public:
  const clang::ento::BugType Unchecked{this, "Unchecked CUDA status",
                                       "gpumem status"};
  /// gpumem.UncheckedStatus:LaunchChecks.
  llvm::StringSet<> LaunchChecks;

  void checkPreCall(const clang::ento::CallEvent &Call,
                    clang::ento::CheckerContext &C) const;
  void checkPostCall(const clang::ento::CallEvent &Call,
                     clang::ento::CheckerContext &C) const;
  void checkBind(clang::ento::SVal Loc, clang::ento::SVal Val,
                 const clang::Stmt *S, bool AtDeclInit,
                 clang::ento::CheckerContext &C) const;
  void checkLocation(clang::ento::SVal Loc, bool IsLoad, const clang::Stmt *S,
                     clang::ento::CheckerContext &C) const;
  void checkEndFunction(const clang::ReturnStmt *RS,
                        clang::ento::CheckerContext &C) const;

private:
  /// (file, line) of each finding made: one per line.
  mutable llvm::DenseSet<std::pair<unsigned, unsigned>> ReportedLines;

  void report(llvm::StringRef Msg, const clang::Expr *At,
              const clang::LocationContext *LC, clang::ento::ExplodedNode *N,
              clang::ento::CheckerContext &C) const;
};

} // namespace gpumem

#endif // GPUMEM_ANALYZER_STATUSCHECKER_H
