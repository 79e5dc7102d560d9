//===- Reports.cpp - Reports of gpumem.Memory's rules --------------------===//
//
// Part of gpumem.
//
//===----------------------------------------------------------------------===//

#include "MemoryChecker.h"
#include "NoteVisitor.h"
#include "clang/StaticAnalyzer/Core/BugReporter/BugReporter.h"

using namespace clang;
using namespace clang::ento;

namespace gpumem {

ExplodedNode *MemoryChecker::reportRelease(
    const CheckerFrontendWithBugType &Rule, StringRef Msg, SymbolRef Sym,
    const Expr *At, ProgramStateRef State, CheckerContext &C,
    ExplodedNode *Pred) const {
  ExplodedNode *N = C.generateNonFatalErrorNode(State, Pred);
  if (!N)
    return nullptr;
  auto R = std::make_unique<PathSensitiveBugReport>(Rule, Msg, N);
  if (At)
    R->addRange(At->getSourceRange());
  R->markInteresting(Sym);
  R->addVisitor<NoteVisitor>(Sym);
  C.emitReport(std::move(R));
  return N;
}

void MemoryChecker::reportAccess(const CheckerFrontendWithBugType &Rule,
                                 StringRef Msg, SymbolRef Sym, const Stmt *At,
                                 CheckerContext &C) const {
  ExplodedNode *N = C.generateNonFatalErrorNode();
  if (!N)
    return;
  auto R = std::make_unique<PathSensitiveBugReport>(Rule, Msg, N);
  if (At)
    R->addRange(At->getSourceRange());
  R->markInteresting(Sym);
  R->addVisitor<NoteVisitor>(Sym);
  C.emitReport(std::move(R));
}

} // namespace gpumem
