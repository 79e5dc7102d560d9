//===- Leaks.cpp - GM001, GM005 and GM006: memory that is never released -===//
//
// Part of gpumem. The engine tells gpumem.Memory when the last reference to
// an allocation dies; this file decides which rule that is: a leak on an
// early exit of a function that releases on its normal path (GM006), memory
// allocated in a loop and lost before the next iteration (GM005), or memory
// never released on some path (GM001).
//
//===----------------------------------------------------------------------===//

#include "MemoryChecker.h"
#include "NoteVisitor.h"
#include "clang/AST/ParentMap.h"
#include "clang/AST/StmtCXX.h"
#include "clang/Analysis/CFG.h"
#include "clang/Analysis/CFGStmtMap.h"
#include "clang/StaticAnalyzer/Core/BugReporter/BugReporter.h"
#include "clang/StaticAnalyzer/Core/PathSensitive/ExplodedGraph.h"

using namespace clang;
using namespace clang::ento;

namespace gpumem {
namespace {

bool isOnceLoop(const DoStmt *DS, ASTContext &Ctx) {
  Expr::EvalResult R;
  return DS->getCond()->EvaluateAsInt(R, Ctx) && R.Val.getInt() == 0;
}

/// The innermost loop whose body holds \p S (a loop's condition, init and
/// increment are not its body; `do { } while (0)` is no loop).
const Stmt *enclosingLoop(const Stmt *S, const ParentMap &PM, ASTContext &Ctx) {
  for (const Stmt *Cur = S, *P = PM.getParent(S); P;
       Cur = P, P = PM.getParent(P)) {
    const Stmt *Body = nullptr;
    if (const auto *FS = dyn_cast<ForStmt>(P))
      Body = FS->getBody();
    else if (const auto *WS = dyn_cast<WhileStmt>(P))
      Body = WS->getBody();
    else if (const auto *DS = dyn_cast<DoStmt>(P))
      Body = isOnceLoop(DS, Ctx) ? nullptr : DS->getBody();
    else if (const auto *RS = dyn_cast<CXXForRangeStmt>(P))
      Body = RS->getBody();
    if (Body && Body == Cur)
      return P;
  }
  return nullptr;
}

bool isWithin(const Stmt *S, const Stmt *Ancestor, const ParentMap &PM) {
  for (; S; S = PM.getParent(S))
    if (S == Ancestor)
      return true;
  return false;
}

/// The loop or switch a break or continue leaves.
const Stmt *jumpTarget(const Stmt *Jump, const ParentMap &PM) {
  for (const Stmt *P = PM.getParent(Jump); P; P = PM.getParent(P)) {
    if (isa<ForStmt, WhileStmt, DoStmt, CXXForRangeStmt>(P))
      return P;
    if (isa<SwitchStmt>(P))
      return isa<BreakStmt>(Jump) ? P : nullptr;
  }
  return nullptr;
}

/// Where the engine found the memory unreachable, in the user's code: when
/// that is inside the runtime header's inline wrapper (a new allocation
/// overwrote the only pointer), the wrapper's call site.
std::pair<const Stmt *, const StackFrameContext *>
userLeakPoint(const ExplodedNode *N) {
  const Stmt *S = N->getStmtForDiagnostics();
  const StackFrameContext *SF = N->getStackFrame();
  const SourceManager &SM =
      N->getCodeDecl().getASTContext().getSourceManager();
  while (SF->getParent() && SF->getDecl() &&
         SM.isInSystemHeader(SF->getDecl()->getLocation())) {
    S = SF->getCallSite();
    SF = SF->getParent()->getStackFrame();
  }
  return {S, SF};
}

bool isLastStatement(const Stmt *S, const Decl *D) {
  const auto *Body = dyn_cast_or_null<CompoundStmt>(D ? D->getBody() : nullptr);
  return Body && !Body->body_empty() && Body->body_back() == S;
}

/// Is \p S an exit that skips the rest of the function (or of the loop
/// iteration the memory was allocated in)?
bool isEarlyExit(const Stmt *S, const Stmt *AllocExpr,
                 const LocationContext *LC) {
  const ParentMap &PM = LC->getParentMap();
  if (isa<GotoStmt>(S))
    return true;
  if (isa<CXXThrowExpr>(S)) {
    for (const Stmt *P = PM.getParent(S); P; P = PM.getParent(P))
      if (isa<CXXTryStmt>(P))
        return false;
    return true;
  }
  if (isa<ReturnStmt>(S))
    return !isLastStatement(S, LC->getDecl());
  if (isa<BreakStmt, ContinueStmt>(S)) {
    const Stmt *Target = jumpTarget(S, PM);
    return Target && !isa<SwitchStmt>(Target) &&
           isWithin(AllocExpr, Target, PM);
  }
  return false;
}

/// A release of the memory the leak rules follow (not free or realloc).
bool isReleaseName(StringRef Name) {
  const ReleaseSpec *RS = findReleaseNamed(Name);
  return RS && RS->Fn != ReleaseFn::Free;
}

bool containsRelease(const Stmt *S, const llvm::StringSet<> &Extra) {
  if (!S)
    return false;
  if (const auto *CE = dyn_cast<CallExpr>(S))
    if (const auto *FD = CE->getDirectCallee())
      if (FD->getIdentifier() &&
          (isReleaseName(FD->getName()) || Extra.contains(FD->getName())))
        return true;
  for (const Stmt *Child : S->children())
    if (containsRelease(Child, Extra))
      return true;
  return false;
}

/// The variable an allocation is stored in: the one whose address the call
/// is given (cudaMalloc(&d, n)), or the one it is assigned to or initialises.
const VarDecl *allocatedVar(const Expr *AllocExpr, const ParentMap &PM) {
  if (const auto *CE = dyn_cast<CallExpr>(AllocExpr))
    for (const Expr *Arg : CE->arguments())
      if (const auto *UO = dyn_cast<UnaryOperator>(Arg->IgnoreParenCasts()))
        if (UO->getOpcode() == UO_AddrOf)
          if (const auto *DR =
                  dyn_cast<DeclRefExpr>(UO->getSubExpr()->IgnoreParenCasts()))
            return dyn_cast<VarDecl>(DR->getDecl());
  // cuMemMap(va, ...): the mapping is made at the range va holds.
  if (const auto *CE = dyn_cast<CallExpr>(AllocExpr))
    if (const auto *FD = CE->getDirectCallee())
      if (FD->getIdentifier() && FD->getName() == "cuMemMap" &&
          CE->getNumArgs() > 0)
        if (const auto *DR =
                dyn_cast<DeclRefExpr>(CE->getArg(0)->IgnoreParenImpCasts()))
          return dyn_cast<VarDecl>(DR->getDecl());
  const Stmt *Cur = AllocExpr;
  const Stmt *P = PM.getParentIgnoreParenCasts(Cur);
  if (const auto *BO = dyn_cast_or_null<BinaryOperator>(P))
    if (BO->getOpcode() == BO_Assign)
      if (const auto *DR = dyn_cast<DeclRefExpr>(BO->getLHS()->IgnoreParens()))
        return dyn_cast<VarDecl>(DR->getDecl());
  if (const auto *DS = dyn_cast_or_null<DeclStmt>(P))
    if (DS->isSingleDecl())
      return dyn_cast<VarDecl>(DS->getSingleDecl());
  return nullptr;
}

bool refersTo(const Stmt *S, const VarDecl *VD) {
  if (const auto *DR = dyn_cast_or_null<DeclRefExpr>(S))
    return DR->getDecl() == VD;
  for (const Stmt *Child : S ? S->children() : Stmt::const_child_range(
                                                   Stmt::const_child_iterator(),
                                                   Stmt::const_child_iterator()))
    if (refersTo(Child, VD))
      return true;
  return false;
}

/// Does \p S release what \p VD holds (a release call given the variable)?
bool releasesVar(const Stmt *S, const VarDecl *VD,
                 const llvm::StringSet<> &Extra) {
  if (!S)
    return false;
  if (const auto *CE = dyn_cast<CallExpr>(S))
    if (const auto *FD = CE->getDirectCallee())
      if (FD->getIdentifier() &&
          (isReleaseName(FD->getName()) || Extra.contains(FD->getName())))
        for (const Expr *Arg : CE->arguments())
          if (refersTo(Arg, VD))
            return true;
  for (const Stmt *Child : S->children())
    if (releasesVar(Child, VD, Extra))
      return true;
  return false;
}

/// Does \p S hand what \p VD holds to someone else: return it, or store it
/// anywhere but in a local variable (`*out = a;`, `s->buf = a;`)?
bool handsOnVar(const Stmt *S, const VarDecl *VD) {
  if (!S)
    return false;
  if (const auto *RS = dyn_cast<ReturnStmt>(S))
    if (RS->getRetValue() && refersTo(RS->getRetValue(), VD))
      return true;
  if (const auto *BO = dyn_cast<BinaryOperator>(S))
    if (BO->getOpcode() == BO_Assign &&
        !isa<DeclRefExpr>(BO->getLHS()->IgnoreParenImpCasts()))
      if (const auto *DR =
              dyn_cast<DeclRefExpr>(BO->getRHS()->IgnoreParenImpCasts()))
        if (DR->getDecl() == VD)
          return true;
  for (const Stmt *Child : S->children())
    if (handsOnVar(Child, VD))
      return true;
  return false;
}

/// "d_in (cudaMalloc, line 23)": an allocation as a reviewer finds it.
std::string describe(const AllocState &AS, const SourceManager &SM) {
  const VarDecl *VD =
      allocatedVar(AS.Alloc.Expr, AS.Alloc.Context->getParentMap());
  unsigned Line = SM.getExpansionLineNumber(AS.Alloc.Expr->getBeginLoc());
  return ((VD && VD->getIdentifier() ? VD->getName() : StringRef("memory")) +
          " (" + AS.Alloc.Name + ", line " + Twine(Line) + ")")
      .str();
}

} // namespace

bool MemoryChecker::releasesOnNormalPath(const AllocState &AS,
                                         bool *OnlyHandsOn) const {
  const Decl *D = AS.Alloc.Context->getDecl();
  const VarDecl *VD =
      allocatedVar(AS.Alloc.Expr, AS.Alloc.Context->getParentMap());
  if (OnlyHandsOn)
    *OnlyHandsOn = false;
  if (!VD)
    return functionReleases(D);
  if (!D || releasesVar(D->getBody(), VD, ReleaseFunctions))
    return D != nullptr;
  bool HandsOn = handsOnVar(D->getBody(), VD);
  if (OnlyHandsOn)
    *OnlyHandsOn = HandsOn;
  return HandsOn;
}

bool MemoryChecker::functionReleases(const Decl *D) const {
  auto It = ReleasingFunctions.find(D);
  if (It != ReleasingFunctions.end())
    return It->second;
  bool Releases = D && containsRelease(D->getBody(), ReleaseFunctions);
  ReleasingFunctions[D] = Releases;
  return Releases;
}

const Stmt *MemoryChecker::findEarlyExit(const ExplodedNode *N, SymbolRef Sym,
                                         const AllocState &AS) const {
  const LocationContext *LC = N->getLocationContext();
  if (!AS.Alloc.Context ||
      AS.Alloc.Context->getStackFrame() != LC->getStackFrame())
    return nullptr;
  // Ahead: the engine finds the memory unreachable as it enters the block
  // that exits (`return -1;`, `{ rc = -1; goto out; }`).
  const CFGBlock *B = N->getCFGBlock();
  if (!B)
    if (const Stmt *S = N->getStmtForDiagnostics())
      if (const CFGStmtMap *Map =
              LC->getAnalysisDeclContext()->getCFGStmtMap())
        B = Map->getBlock(S);
  if (B) {
    for (unsigned Steps = 0; B && Steps < 3; ++Steps) {
      for (const CFGElement &E : *B)
        if (auto CS = E.getAs<CFGStmt>())
          if (isa<ReturnStmt, CXXThrowExpr>(CS->getStmt()) &&
              isEarlyExit(CS->getStmt(), AS.Alloc.Expr, LC))
            return CS->getStmt();
      if (const Stmt *T = B->getTerminatorStmt())
        if (isEarlyExit(T, AS.Alloc.Expr, LC))
          return T;
      if (B->succ_size() != 1)
        break;
      B = *B->succ_begin();
    }
  }
  // Behind: a jump the path took since the allocation (`break;` out of the
  // loop that allocates, then found unreachable after it).
  for (const ExplodedNode *Cur = N; Cur; Cur = Cur->getFirstPred()) {
    if (!getAlloc(Cur->getState(), Sym) && Cur != N)
      break;
    if (Cur->getStackFrame() != LC->getStackFrame())
      continue;
    if (auto BE = Cur->getLocation().getAs<BlockEdge>())
      if (const Stmt *T = BE->getSrc()->getTerminatorStmt())
        if (isa<GotoStmt, BreakStmt, ContinueStmt>(T) &&
            isEarlyExit(T, AS.Alloc.Expr, LC))
          return T;
  }
  return nullptr;
}

void MemoryChecker::reportEarlyExit(const Stmt *Exit,
                                    ArrayRef<SymbolRef> Leaked,
                                    ProgramStateRef Before, ExplodedNode *N,
                                    bool ByThrow, CheckerContext &C) const {
  // One finding per exit: every allocation it leaks, listed. Other paths
  // reach the exit with other allocations live; the first found stands.
  if (Leaked.empty() || !ReportedExits.insert(Exit).second)
    return;
  const SourceManager &SM = C.getSourceManager();
  const AllocState *First = getAlloc(Before, Leaked.front());
  std::string Msg;
  llvm::raw_string_ostream OS(Msg);
  const char *What = ByThrow ? " when this throw leaves the function"
                             : " on this early exit";
  bool AllReleased = true;
  for (SymbolRef Sym : Leaked) {
    bool OnlyHandsOn = false;
    releasesOnNormalPath(*getAlloc(Before, Sym), &OnlyHandsOn);
    AllReleased &= !OnlyHandsOn;
  }
  const bool One = Leaked.size() == 1;
  std::string Normal =
      AllReleased ? std::string("the function releases ") +
                        (One ? "it" : "them") + " on its normal path"
                  : std::string("on its normal path the function releases or "
                                "passes ") +
                        (One ? "it" : "them") + " on (returns or stores " +
                        (One ? "it" : "them") + ")";
  if (Leaked.size() == 1)
    OS << "memory allocated with " << First->Alloc.Name << " is not released"
       << What << ", though " << Normal << ": "
       << describe(*First, SM);
  else
    OS << Leaked.size() << " allocations are not released" << What
       << ", though " << Normal << ": ";
  for (size_t I = 0; Leaked.size() > 1 && I < Leaked.size(); ++I)
    OS << (I ? ", " : "") << describe(*getAlloc(Before, Leaked[I]), SM);
  const BugType &Type =
      ByThrow || isa<CXXThrowExpr>(Exit)
          ? ThrowLeak
          : static_cast<const BugType &>(EarlyExitLeak);
  PathDiagnosticLocation Unique = PathDiagnosticLocation::createBegin(
      Exit, SM, N->getLocationContext());
  auto R = std::make_unique<PathSensitiveBugReport>(
      Type, Msg, N, Unique, First->Alloc.Context->getDecl());
  for (SymbolRef Sym : Leaked) {
    R->markInteresting(Sym);
    if (ByThrow)
      R->addVisitor<NoteVisitor>(Sym);
    else
      R->addVisitor<NoteVisitor>(Sym, Exit, N->getLocationContext());
  }
  C.emitReport(std::move(R));
}

void MemoryChecker::reportLeaks(ArrayRef<SymbolRef> Leaked,
                                ProgramStateRef Before, ProgramStateRef After,
                                CheckerContext &C) const {
  ExplodedNode *N = C.generateNonFatalErrorNode(After);
  if (!N)
    return;
  ASTContext &Ctx = C.getASTContext();
  llvm::SmallVector<SymbolRef, 4> AtExit;
  const Stmt *ExitOfAll = nullptr;
  for (SymbolRef Sym : Leaked) {
    const AllocState *AS = getAlloc(Before, Sym);
    if (!AS || !AS->Alloc.Expr)
      continue;
    const LocationContext *AllocLC = AS->Alloc.Context;
    const Stmt *Exit = findEarlyExit(N, Sym, *AS);
    if (Exit && releasesOnNormalPath(*AS)) {
      if (EarlyExitLeak.isEnabled() && (!ExitOfAll || Exit == ExitOfAll)) {
        ExitOfAll = Exit;
        AtExit.push_back(Sym);
      }
      continue;
    }
    const CheckerFrontendWithBugType *Rule = &NeverReleased;
    std::string Msg;
    llvm::raw_string_ostream OS(Msg);
    const Stmt *Loop =
        enclosingLoop(AS->Alloc.Expr, AllocLC->getParentMap(), Ctx);
    auto [LeakStmt, LeakFrame] = userLeakPoint(N);
    if (Loop && LeakStmt && LeakFrame == AllocLC->getStackFrame() &&
        isWithin(LeakStmt, Loop, AllocLC->getParentMap())) {
      Rule = &LoopAllocation;
      OS << "memory allocated with " << AS->Alloc.Name
         << " in a loop is lost before the next iteration allocates again; "
            "release it in the iteration or allocate once before the loop";
    } else {
      OS << "memory allocated with " << AS->Alloc.Name
         << " is never released on this path; release it with "
         << expectedRelease(AS->Kind);
    }
    if (!Rule->isEnabled())
      continue;
    PathDiagnosticLocation Unique = PathDiagnosticLocation::createBegin(
        AS->Alloc.Expr, C.getSourceManager(), AllocLC);
    auto R = std::make_unique<PathSensitiveBugReport>(*Rule, Msg, N, Unique,
                                                      AllocLC->getDecl());
    R->markInteresting(Sym);
    R->addVisitor<NoteVisitor>(Sym, AS->Alloc.Expr, AllocLC);
    C.emitReport(std::move(R));
  }
  if (ExitOfAll)
    reportEarlyExit(ExitOfAll, AtExit, Before, N, false, C);
}

namespace {

/// Does \p S hold an expression of a CUDA status type?
bool testsStatus(const Stmt *S) {
  if (const auto *E = dyn_cast_or_null<Expr>(S))
    if (const TagDecl *TD = E->getType().getCanonicalType()->getAsTagDecl())
      if (TD->getIdentifier() &&
          (TD->getName() == "cudaError" || TD->getName() == "cudaError_enum"))
        return true;
  for (const Stmt *Child : S ? S->children() : Stmt::const_child_range(
                                                   Stmt::const_child_iterator(),
                                                   Stmt::const_child_iterator()))
    if (testsStatus(Child))
      return true;
  return false;
}

/// exit(0), exit(EXIT_SUCCESS), _exit(0)... written in \p S, not as the
/// error branch of a check.
bool callsSuccessfulExit(const Stmt *S, const ParentMap &PM,
                         const ASTContext &Ctx) {
  if (!S)
    return false;
  if (const auto *CE = dyn_cast<CallExpr>(S))
    if (const FunctionDecl *FD = CE->getDirectCallee())
      if (FD->getIdentifier() && CE->getNumArgs() == 1 &&
          (FD->getName() == "exit" || FD->getName() == "_exit" ||
           FD->getName() == "_Exit" || FD->getName() == "quick_exit")) {
        Expr::EvalResult R;
        if (CE->getArg(0)->EvaluateAsInt(R, Ctx) && R.Val.getInt() == 0 &&
            !isErrorBranchExit(CE, PM))
          return true;
      }
  for (const Stmt *Child : S->children())
    if (callsSuccessfulExit(Child, PM, Ctx))
      return true;
  return false;
}

} // namespace

bool isErrorBranchExit(const Expr *Exit, const ParentMap &PM) {
  // A check macro's exit, whatever status it gives (`exit(0)` in some).
  if (Exit->getBeginLoc().isMacroID())
    return true;
  for (const Stmt *Cur = Exit, *P = PM.getParent(Exit); P;
       Cur = P, P = PM.getParent(P))
    if (const auto *IS = dyn_cast<IfStmt>(P))
      if (IS->getCond() != Cur && testsStatus(IS->getCond()))
        return true;
  return false;
}

bool MemoryChecker::mayExitSuccessfully(const LocationContext *LC) const {
  for (const StackFrameContext *SF = LC->getStackFrame(); SF;
       SF = SF->getParent() ? SF->getParent()->getStackFrame() : nullptr) {
    const Decl *D = SF->getDecl();
    auto It = ExitingFunctions.find(D);
    if (It == ExitingFunctions.end())
      It = ExitingFunctions
               .try_emplace(D, D && D->getBody() &&
                                   callsSuccessfulExit(
                                       D->getBody(), SF->getParentMap(),
                                       D->getASTContext()))
               .first;
    if (It->second)
      return true;
  }
  return false;
}

void MemoryChecker::reportLeaksAtExit(const CallEvent &Exit,
                                      CheckerContext &C) const {
  if (!NeverReleased.isEnabled())
    return;
  ProgramStateRef State = C.getState();
  ExplodedNode *N = nullptr;
  llvm::SmallVector<std::pair<SymbolRef, AllocState>, 4> Leaked;
  for (const auto &[Sym, AS] : getLeakedBeforeExit(State))
    Leaked.push_back({Sym, AS});
  for (const auto &[Sym, AS] : getAllocs(State))
    if (mayLeak(AS) &&
        !allocationFailed(State, Sym, AS))
      Leaked.push_back({Sym, AS});
  for (const auto &[Sym, AS] : Leaked) {
    if (!AS.Alloc.Expr || !AS.Alloc.Context)
      continue;
    if (!N)
      N = C.generateNonFatalErrorNode();
    if (!N)
      return;
    std::string Msg = ("memory allocated with " + AS.Alloc.Name +
                       " is never released on this path, which ends the "
                       "program with " +
                       calleeName(Exit) + "(0); release it with " +
                       expectedRelease(AS.Kind) + " before")
                          .str();
    PathDiagnosticLocation Unique = PathDiagnosticLocation::createBegin(
        AS.Alloc.Expr, C.getSourceManager(), AS.Alloc.Context);
    auto R = std::make_unique<PathSensitiveBugReport>(
        ExitLeak, Msg, N, Unique, AS.Alloc.Context->getDecl());
    R->markInteresting(Sym);
    R->addVisitor<NoteVisitor>(Sym, AS.Alloc.Expr, AS.Alloc.Context);
    C.emitReport(std::move(R));
  }
}

void MemoryChecker::checkPreStmt(const CXXThrowExpr *TE,
                                 CheckerContext &C) const {
  // The engine does not follow exceptions: memory held by this frame and not
  // caught by a handler here is leaked by the throw.
  const LocationContext *LC = C.getLocationContext();
  const ParentMap &PM = LC->getParentMap();
  for (const Stmt *P = PM.getParent(TE); P; P = PM.getParent(P))
    if (isa<CXXTryStmt>(P))
      return;
  if (!EarlyExitLeak.isEnabled())
    return;
  ProgramStateRef State = C.getState();
  llvm::SmallVector<SymbolRef, 2> Leaked;
  for (const auto &[Sym, AS] : getAllocs(State))
    if (mayLeak(AS) &&
        AS.Alloc.Context &&
        AS.Alloc.Context->getStackFrame() == C.getStackFrame() &&
        !allocationFailed(State, Sym, AS) && releasesOnNormalPath(AS))
      Leaked.push_back(Sym);
  if (Leaked.empty())
    return;
  ExplodedNode *N = C.generateNonFatalErrorNode();
  if (N)
    reportEarlyExit(TE, Leaked, State, N, true, C);
}

} // namespace gpumem
