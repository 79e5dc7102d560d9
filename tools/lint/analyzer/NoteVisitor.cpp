//===- NoteVisitor.cpp - "allocated here" and "released here" notes -----===//
//
// Part of gpumem.
//
//===----------------------------------------------------------------------===//

#include "NoteVisitor.h"
#include "clang/StaticAnalyzer/Core/BugReporter/BugReporter.h"
#include "clang/Analysis/PathDiagnostic.h"
#include "clang/StaticAnalyzer/Core/PathSensitive/ExplodedGraph.h"

using namespace clang;
using namespace clang::ento;

namespace gpumem {

void NoteVisitor::Profile(llvm::FoldingSetNodeID &ID) const {
  static int Tag = 0;
  ID.AddPointer(&Tag);
  ID.AddPointer(Sym);
}

static PathDiagnosticPieceRef noteAt(const CallSite &Site, StringRef What,
                                     BugReporterContext &BRC) {
  if (!Site.Expr || !Site.Context)
    return nullptr;
  PathDiagnosticLocation Loc(Site.Expr, BRC.getSourceManager(), Site.Context);
  return std::make_shared<PathDiagnosticEventPiece>(
      Loc, (What + " here with " + Site.Name).str(), true);
}

PathDiagnosticPieceRef NoteVisitor::getEndPath(BugReporterContext &BRC,
                                               const ExplodedNode *N,
                                               PathSensitiveBugReport &BR) {
  if (!EndAt || !EndContext)
    return nullptr;
  PathDiagnosticLocation Loc(EndAt, BRC.getSourceManager(), EndContext);
  return std::make_shared<PathDiagnosticEventPiece>(Loc, BR.getDescription(),
                                                    true);
}

PathDiagnosticPieceRef NoteVisitor::VisitNode(const ExplodedNode *N,
                                              BugReporterContext &BRC,
                                              PathSensitiveBugReport &) {
  const ExplodedNode *Pred = N->getFirstPred();
  if (!Pred)
    return nullptr;
  const AllocState *Now = getAlloc(N->getState(), Sym);
  if (!Now)
    return nullptr;
  const AllocState *Before = getAlloc(Pred->getState(), Sym);
  if (!Before)
    return noteAt(Now->Alloc, "allocated", BRC);
  if (Now->Released && !Before->Released)
    return noteAt(Now->Release, "released", BRC);
  return nullptr;
}

} // namespace gpumem
