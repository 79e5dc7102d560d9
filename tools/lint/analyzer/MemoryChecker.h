//===- MemoryChecker.h - gpumem's model of CUDA memory ------------------===//
//
// Part of gpumem. One checker family: the hidden modelling checker
// gpumem.Memory tracks every allocation along each path; the rule checkers
// (gpumem.NeverReleased, gpumem.MismatchedRelease, ...) are its frontends and
// only decide which of its findings are reported.
//
//===----------------------------------------------------------------------===//

#ifndef GPUMEM_ANALYZER_MEMORYCHECKER_H
#define GPUMEM_ANALYZER_MEMORYCHECKER_H

#include "Facts.h"
#include "MemoryState.h"
#include "clang/StaticAnalyzer/Core/BugReporter/BugType.h"
#include "clang/StaticAnalyzer/Core/Checker.h"
#include "clang/StaticAnalyzer/Core/PathSensitive/CheckerContext.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"

namespace clang {
class ParentMap;
}

namespace gpumem {

class MemoryChecker
    : public clang::ento::CheckerFamily<
          clang::ento::check::PreCall, clang::ento::check::PostCall,
          clang::ento::check::PostStmt<clang::CXXNewExpr>,
          clang::ento::check::PreStmt<clang::CXXDeleteExpr>,
          clang::ento::check::PreStmt<clang::ReturnStmt>,
          clang::ento::check::PreStmt<clang::CXXThrowExpr>,
          clang::ento::check::Location, clang::ento::check::Bind,
          clang::ento::check::DeadSymbols, clang::ento::check::LiveSymbols,
          clang::ento::check::PointerEscape, clang::ento::check::BlockEntrance,
          clang::ento::check::EndOfTranslationUnit, clang::ento::eval::Call> {
public:
  clang::ento::CheckerFrontend Modelling;
  // Leaks found on a path that ends in exit() or abort() anyway (the error
  // branch of a check macro) are not reported: SuppressOnSink.
  clang::ento::CheckerFrontendWithBugType NeverReleased{
      "Allocation never released", "gpumem memory", true};
  clang::ento::CheckerFrontendWithBugType MismatchedRelease{
      "Mismatched release", "gpumem memory"};
  clang::ento::CheckerFrontendWithBugType LoopAllocation{
      "Allocation lost at the next loop iteration", "gpumem memory", true};
  clang::ento::CheckerFrontendWithBugType EarlyExitLeak{
      "Allocation leaked on an early exit", "gpumem memory", true};
  clang::ento::CheckerFrontendWithBugType WriteCombinedRead{
      "Host read of write-combined memory", "gpumem memory"};
  clang::ento::CheckerFrontendWithBugType DoubleRelease{"Double release",
                                                        "gpumem memory"};
  clang::ento::CheckerFrontendWithBugType UseAfterRelease{
      "Use after release", "gpumem memory"};
  clang::ento::CheckerFrontendWithBugType InteriorRelease{
      "Release of an interior pointer", "gpumem memory"};
  clang::ento::CheckerFrontendWithBugType StreamOrderedRelease{
      "Stream-ordered release of memory that is not stream-ordered",
      "gpumem memory"};

  /// gpumem.Memory:ReleaseFunctions: project functions that release memory
  /// of any kind (their first argument).
  llvm::StringSet<> ReleaseFunctions;
  /// gpumem.Memory:OwnerFunctions: functions that take ownership of every
  /// pointer passed to them.
  llvm::StringSet<> OwnerFunctions;
  /// gpumem.Memory:NoReturnFunctions: error handlers that do not return
  /// (exit or jump away), named as the function or as the macro the call is
  /// written with, for handlers whose body is in another translation unit.
  llvm::StringSet<> NoReturnFunctions;

  /// gpumem.Memory:FactsIn: the facts of functions defined in other
  /// translation units (Facts.h), as the front end's first pass learnt them.
  FactTable ImportedFacts;
  /// gpumem.Memory:FactsOut: where this unit's facts go.
  std::string FactsOut;

  llvm::StringRef getDebugTag() const override { return "gpumem.Memory"; }

  bool evalCall(const clang::ento::CallEvent &Call,
                clang::ento::CheckerContext &C) const;
  void checkPreCall(const clang::ento::CallEvent &Call,
                    clang::ento::CheckerContext &C) const;
  void checkPostCall(const clang::ento::CallEvent &Call,
                     clang::ento::CheckerContext &C) const;
  void checkPostStmt(const clang::CXXNewExpr *NE,
                     clang::ento::CheckerContext &C) const;
  void checkPreStmt(const clang::CXXDeleteExpr *DE,
                    clang::ento::CheckerContext &C) const;
  void checkPreStmt(const clang::ReturnStmt *RS,
                    clang::ento::CheckerContext &C) const;
  void checkPreStmt(const clang::CXXThrowExpr *TE,
                    clang::ento::CheckerContext &C) const;
  void checkLocation(clang::ento::SVal Loc, bool IsLoad, const clang::Stmt *S,
                     clang::ento::CheckerContext &C) const;
  void checkBind(clang::ento::SVal Loc, clang::ento::SVal Val,
                 const clang::Stmt *S, bool AtDeclInit,
                 clang::ento::CheckerContext &C) const;
  void checkDeadSymbols(clang::ento::SymbolReaper &SR,
                        clang::ento::CheckerContext &C) const;
  void checkLiveSymbols(clang::ento::ProgramStateRef State,
                        clang::ento::SymbolReaper &SR) const;
  /// After the engine widens a loop (widen-loops): puts back what the loop
  /// does not write (Widening.cpp).
  void checkBlockEntrance(const clang::BlockEntrance &BE,
                          clang::ento::CheckerContext &C) const;
  void checkEndOfTranslationUnit(const clang::TranslationUnitDecl *TU,
                                 clang::ento::AnalysisManager &,
                                 clang::ento::BugReporter &) const;
  clang::ento::ProgramStateRef
  checkPointerEscape(clang::ento::ProgramStateRef State,
                     const clang::ento::InvalidatedSymbols &Escaped,
                     const clang::ento::CallEvent *Call,
                     clang::ento::PointerEscapeKind Kind) const;

private:
  // Allocation and release (MemoryChecker.cpp).
  /// The state after Call allocated as Spec says, from State (State itself
  /// when the call's result cannot be tracked).
  clang::ento::ProgramStateRef allocate(const AllocSpec &Spec,
                                        const clang::ento::CallEvent &Call,
                                        clang::ento::CheckerContext &C,
                                        clang::ento::ProgramStateRef State,
                                        bool StatusReturned = true) const;
  /// realloc: a null result released nothing, the old block stays allocated;
  /// a non-null one is a new allocation (the old one was released before).
  void reallocated(const AllocSpec &Spec, const clang::ento::CallEvent &Call,
                   clang::ento::CheckerContext &C) const;
  /// cuMemMap at an address range this path reserved: a mapping, released
  /// by cuMemUnmap at the same address.
  void mapped(const clang::ento::CallEvent &Call,
              clang::ento::CheckerContext &C) const;
  /// Releases \p Ptr from \p Pred (the context's node when null); the
  /// node made, or null when nothing changed.
  clang::ento::ExplodedNode *release(clang::ento::SVal Ptr, ReleaseFn Fn,
                                     CallSite Site,
                                     clang::ento::CheckerContext &C,
                                     clang::ento::ExplodedNode *Pred =
                                         nullptr) const;

  // Facts of the functions the analysis does not follow into (Facts.cpp,
  // applied in MemoryChecker.cpp).
  /// The facts of the function \p Call calls, when the engine does not
  /// inline it: learnt from its body in this unit (\p Inlined false: the
  /// engine evaluated the call without it), or imported. Null otherwise.
  const Facts *factsFor(const clang::ento::CallEvent &Call,
                        bool Inlined) const;
  /// Applies \p F at \p Call: its releases (\p Releases), and its
  /// allocations and returns (\p After, once the call is evaluated).
  void applyFacts(const Facts &F, const clang::ento::CallEvent &Call,
                  bool Releases, bool After,
                  clang::ento::CheckerContext &C) const;
  /// "release_buffer (cudaFree)": a name with storage as long as the
  /// checker's.
  llvm::StringRef siteName(llvm::StringRef Helper, llvm::StringRef Call) const;
  mutable llvm::DenseMap<const clang::Decl *, Facts> LocalFacts;
  mutable llvm::DenseMap<const clang::Decl *, std::string> FactNames;
  mutable llvm::StringSet<> SiteNames;

  // Early exits by throw: the engine ends the path there, so these reports
  // are not suppressed by the sink.
  clang::ento::BugType ThrowLeak{&EarlyExitLeak,
                                 "Allocation leaked by a throw",
                                 "gpumem memory", false};

  // Leaks at exit(0): the engine ends the path at the call, so these
  // reports are not suppressed by the sink.
  clang::ento::BugType ExitLeak{&NeverReleased,
                                "Allocation never released before exit",
                                "gpumem memory", false};

  // Reports (Reports.cpp).
  clang::ento::ExplodedNode *
  reportRelease(const clang::ento::CheckerFrontendWithBugType &Rule,
                llvm::StringRef Msg, clang::ento::SymbolRef Sym,
                const clang::Expr *At, clang::ento::ProgramStateRef State,
                clang::ento::CheckerContext &C,
                clang::ento::ExplodedNode *Pred) const;
  void reportAccess(const clang::ento::CheckerFrontendWithBugType &Rule,
                    llvm::StringRef Msg, clang::ento::SymbolRef Sym,
                    const clang::Stmt *At,
                    clang::ento::CheckerContext &C) const;

  // Leaks (Leaks.cpp).
  void reportLeaks(llvm::ArrayRef<clang::ento::SymbolRef> Leaked,
                   clang::ento::ProgramStateRef Before,
                   clang::ento::ProgramStateRef After,
                   clang::ento::CheckerContext &C) const;
  /// GM001 for each allocation still held when the program ends with
  /// exit(0), as at the end of main.
  void reportLeaksAtExit(const clang::ento::CallEvent &Exit,
                         clang::ento::CheckerContext &C) const;
  /// Some function on the stack calls exit(0) (or exit(EXIT_SUCCESS)).
  bool mayExitSuccessfully(const clang::LocationContext *LC) const;
  mutable llvm::DenseMap<const clang::Decl *, bool> ExitingFunctions;
  const clang::Stmt *findEarlyExit(const clang::ento::ExplodedNode *N,
                                   clang::ento::SymbolRef Sym,
                                   const AllocState &AS) const;
  bool functionReleases(const clang::Decl *D) const;
  /// Does the allocating function release this allocation's variable
  /// anywhere (any release call when the variable is not known), or pass it
  /// on (return it, store it outside its locals: *OnlyHandsOn)?
  bool releasesOnNormalPath(const AllocState &AS,
                            bool *OnlyHandsOn = nullptr) const;
  void reportEarlyExit(const clang::Stmt *Exit,
                       llvm::ArrayRef<clang::ento::SymbolRef> Leaked,
                       clang::ento::ProgramStateRef Before,
                       clang::ento::ExplodedNode *N, bool ByThrow,
                       clang::ento::CheckerContext &C) const;
  /// Exits already reported (GM006): one finding each.
  mutable llvm::DenseSet<const clang::Stmt *> ReportedExits;
  mutable llvm::DenseMap<const clang::Decl *, bool> ReleasingFunctions;

  // Host accesses (Access.cpp).
  void checkHostAccess(clang::ento::SymbolRef Sym, bool IsLoad,
                       const clang::Stmt *S,
                       clang::ento::CheckerContext &C) const;
  void checkCallArguments(const clang::ento::CallEvent &Call,
                          clang::ento::CheckerContext &C) const;
};

/// The symbol of the allocation a pointer value points into, or of an integer
/// device pointer or handle.
clang::ento::SymbolRef allocationSymbol(clang::ento::SVal V);

/// The call site in the user's frame: when the engine is inside an inline
/// wrapper of a system header, the wrapper's call site.
CallSite userCallSite(const clang::Expr *E, llvm::StringRef Name,
                      clang::ento::CheckerContext &C);

/// \p R without the element-0 views that casts of a pointer make.
const clang::ento::MemRegion *stripPointerCasts(const clang::ento::MemRegion *R);

/// An exit() that is the error branch of a check: written by a macro (a
/// check macro's), or under an `if` that tests a CUDA status.
bool isErrorBranchExit(const clang::Expr *Exit, const clang::ParentMap &PM);

/// True inside __global__ or __device__ code.
bool inDeviceCode(clang::ento::CheckerContext &C);

/// Evaluates std::min, std::max and std::swap on scalars as the standard
/// defines them (StdCalls.cpp); false for any other call.
bool evalStdCall(const clang::ento::CallEvent &Call,
                 clang::ento::CheckerContext &C);

} // namespace gpumem

#endif // GPUMEM_ANALYZER_MEMORYCHECKER_H
