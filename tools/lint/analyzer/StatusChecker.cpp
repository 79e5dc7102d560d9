//===- StatusChecker.cpp - GM004: CUDA statuses nobody looks at ----------===//
//
// Part of gpumem.
//
//===----------------------------------------------------------------------===//

#include "StatusChecker.h"
#include "MemoryApi.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMap.h"
#include "clang/AST/StmtCXX.h"
#include "clang/Lex/Lexer.h"
#include "clang/StaticAnalyzer/Core/BugReporter/BugReporter.h"
#include "clang/StaticAnalyzer/Core/BugReporter/BugReporterVisitors.h"
#include "clang/StaticAnalyzer/Core/PathSensitive/CallEvent.h"
#include "clang/StaticAnalyzer/Core/PathSensitive/ProgramStateTrait.h"

using namespace clang;
using namespace clang::ento;

namespace {

/// A status kept in a variable and not read yet: the call that returned it.
struct StoredStatus {
  const Expr *Call;
  const LocationContext *Context;
  bool operator==(const StoredStatus &O) const {
    return Call == O.Call && Context == O.Context;
  }
  void Profile(llvm::FoldingSetNodeID &ID) const {
    ID.AddPointer(Call);
    ID.AddPointer(Context);
  }
};

} // namespace

REGISTER_MAP_WITH_PROGRAMSTATE(GpumemStoredStatuses, const MemRegion *,
                               StoredStatus)
REGISTER_TRAIT_WITH_PROGRAMSTATE(GpumemPendingLaunch, const Expr *)
// Statuses discarded and not yet judged: a cudaGetLastError or
// cudaPeekAtLastError next reads the error they recorded.
REGISTER_MAP_WITH_PROGRAMSTATE(GpumemDiscardedStatuses, const Expr *,
                               const LocationContext *)
// Of those, the statuses of releases (cudaFree, cudaStreamDestroy, ...):
// judged only at a later CUDA call that is not a release (not in teardown).
REGISTER_SET_WITH_PROGRAMSTATE(GpumemCleanupStatuses, const Expr *)
REGISTER_TRAIT_WITH_PROGRAMSTATE(GpumemPendingLaunchContext,
                                 const LocationContext *)
// The pending launch was followed by a synchronization: the function waited
// for the kernel itself, so its callers are not the ones to ask for its error.
REGISTER_TRAIT_WITH_PROGRAMSTATE(GpumemPendingLaunchSynced, bool)

namespace gpumem {
namespace {

/// Puts the warning at the call whose status went unread, not where the
/// engine noticed it.
class StatusEndVisitor final : public BugReporterVisitor {
  const Expr *At;
  const LocationContext *Context;

public:
  StatusEndVisitor(const Expr *At, const LocationContext *Context)
      : At(At), Context(Context) {}
  void Profile(llvm::FoldingSetNodeID &ID) const override {
    ID.AddPointer(At);
    ID.AddPointer(Context);
  }
  PathDiagnosticPieceRef VisitNode(const ExplodedNode *, BugReporterContext &,
                                   PathSensitiveBugReport &) override {
    return nullptr;
  }
  PathDiagnosticPieceRef getEndPath(BugReporterContext &BRC,
                                    const ExplodedNode *,
                                    PathSensitiveBugReport &BR) override {
    PathDiagnosticLocation Loc(At, BRC.getSourceManager(), Context);
    return std::make_shared<PathDiagnosticEventPiece>(Loc, BR.getDescription(),
                                                      true);
  }
};

bool isStatusType(QualType T) {
  const TagDecl *TD = T.getCanonicalType()->getAsTagDecl();
  if (!TD || !TD->getIdentifier())
    return false;
  StringRef Name = TD->getName();
  return Name == "cudaError" || Name == "cudaError_enum";
}

bool inSystemHeader(const Decl *D) {
  return D && D->getASTContext().getSourceManager().isInSystemHeader(
                  D->getLocation());
}

bool inUserCode(CheckerContext &C) {
  return !inSystemHeader(C.getStackFrame()->getDecl());
}

/// A CUDA runtime or driver call as the user wrote it (the C function, or
/// the runtime header's C++ wrapper of it).
bool isUserCudaCall(const CallEvent &Call, CheckerContext &C) {
  return inUserCode(C) && Call.isInSystemHeader() &&
         isCudaApiName(calleeName(Call));
}

/// A function whose name says it checks errors: "check" or "error" in it,
/// in any case (checkCUDAError, cuda_check, HandleError).
bool namesACheck(StringRef Name) {
  return Name.contains_insensitive("check") ||
         Name.contains_insensitive("error");
}

bool isSynchronization(StringRef Name) {
  return Name == "cudaDeviceSynchronize" || Name == "cudaThreadSynchronize" ||
         Name == "cudaStreamSynchronize" || Name == "cuCtxSynchronize" ||
         Name == "cuStreamSynchronize";
}

bool isLastErrorQuery(StringRef Name) {
  return Name == "cudaGetLastError" || Name == "cudaPeekAtLastError";
}

/// Calls that name an error for a message: they neither read nor change the
/// runtime's error record, so they are not "the next CUDA call".
bool isErrorText(StringRef Name) {
  return Name == "cudaGetErrorName" || Name == "cudaGetErrorString" ||
         Name == "cuGetErrorName" || Name == "cuGetErrorString";
}

/// A call that releases or destroys something: in teardown, and in the
/// cleanup of an error path, its status is not the program's to act on.
bool isCleanupCall(StringRef Name) {
  if (!isCudaApiName(Name))
    return false;
  for (StringRef Word : {"Free", "Destroy", "Unregister", "Release", "Unload",
                         "Unmap"})
    if (Name.contains(Word))
      return true;
  return Name == "cudaDeviceReset";
}

/// True when the value of \p E is dropped: it is a statement of its own.
bool isDiscarded(const Expr *E, const ParentMap &PM) {
  const Stmt *Cur = E;
  const Stmt *P = PM.getParent(Cur);
  while (P && (isa<ExprWithCleanups, ParenExpr, ConstantExpr>(P) ||
               (isa<ImplicitCastExpr>(P) &&
                cast<ImplicitCastExpr>(P)->getCastKind() != CK_ToVoid))) {
    Cur = P;
    P = PM.getParent(P);
  }
  if (!P)
    return false;
  if (isa<CompoundStmt, LabelStmt, SwitchCase, AttributedStmt>(P))
    return true;
  if (const auto *IS = dyn_cast<IfStmt>(P))
    return IS->getCond() != Cur;
  if (const auto *WS = dyn_cast<WhileStmt>(P))
    return WS->getCond() != Cur;
  if (const auto *DS = dyn_cast<DoStmt>(P))
    return DS->getCond() != Cur;
  if (const auto *FS = dyn_cast<ForStmt>(P))
    return FS->getCond() != Cur;
  if (const auto *BO = dyn_cast<BinaryOperator>(P))
    return BO->getOpcode() == BO_Comma && BO->getLHS() == Cur;
  return false;
}

const Expr *assignedValue(const Stmt *S) {
  const Expr *V = nullptr;
  if (const auto *DS = dyn_cast_or_null<DeclStmt>(S)) {
    if (const auto *VD = dyn_cast<VarDecl>(DS->getSingleDecl()))
      V = VD->getInit();
  } else if (const auto *BO = dyn_cast_or_null<BinaryOperator>(S)) {
    if (BO->getOpcode() == BO_Assign)
      V = BO->getRHS();
  }
  if (!V)
    return nullptr;
  V = V->IgnoreParenImpCasts();
  if (const auto *EWC = dyn_cast<ExprWithCleanups>(V))
    V = EWC->getSubExpr()->IgnoreParenImpCasts();
  return V;
}

/// What the call calls, as a reviewer reads it: the function's name, or for a
/// call through a function pointer the callee as written (drv.cuMemFree).
std::string calledName(const Expr *E, const ASTContext &Ctx) {
  const auto *CE = dyn_cast_or_null<CallExpr>(E);
  if (!CE)
    return "the call";
  if (const auto *FD = CE->getDirectCallee())
    if (FD->getIdentifier())
      return FD->getNameAsString();
  const Expr *Callee = CE->getCallee()->IgnoreParenImpCasts();
  StringRef Text = Lexer::getSourceText(
      CharSourceRange::getTokenRange(Callee->getSourceRange()),
      Ctx.getSourceManager(), Ctx.getLangOpts());
  if (Text.empty() || Text.size() > 60 || Text.contains('\n'))
    return "the call";
  return Text.str();
}

/// \p State holds the status (or launch) of the call \p At as not read yet.
bool records(ProgramStateRef State, const Expr *At) {
  if (State->get<GpumemDiscardedStatuses>(At) ||
      State->get<GpumemPendingLaunch>() == At)
    return true;
  for (const auto &[Region, Stored] : State->get<GpumemStoredStatuses>())
    if (Stored.Call == At)
      return true;
  return false;
}

} // namespace

void StatusChecker::report(StringRef Msg, const Expr *At,
                           const LocationContext *LC, ExplodedNode *N,
                           CheckerContext &C) const {
  if (!N)
    return;
  // One finding per line: other paths (or callers of an inlined helper)
  // reach the same unread status with another "next call".
  const SourceManager &SM = C.getSourceManager();
  SourceLocation Loc = SM.getExpansionLoc(At->getBeginLoc());
  if (!ReportedLines
           .insert({SM.getFileID(Loc).getHashValue(),
                    SM.getExpansionLineNumber(Loc)})
           .second)
    return;
  // The path ends at the call whose status went unread, in the frame that
  // made it: not at the later call (maybe in another helper) where the
  // engine noticed, whose notes ("Calling 'other'") would lead elsewhere,
  // and where clang would merge two findings of one message into one.
  // The node is the one where this checker recorded the status (a change
  // of state, so the engine never reclaims it, as it may other nodes).
  const ExplodedNode *Origin = N;
  for (const ExplodedNode *Cur = N; Cur && Cur->getFirstPred();
       Cur = Cur->getFirstPred()) {
    if (records(Cur->getState(), At) &&
        !records(Cur->getFirstPred()->getState(), At)) {
      Origin = Cur;
      break;
    }
  }
  auto R = std::make_unique<PathSensitiveBugReport>(Unchecked, Msg, Origin);
  R->addVisitor<StatusEndVisitor>(At, LC);
  C.emitReport(std::move(R));
}

void StatusChecker::checkPostCall(const CallEvent &Call,
                                  CheckerContext &C) const {
  if (!inUserCode(C) || !isStatusType(Call.getResultType()))
    return;
  const auto *CE = dyn_cast_or_null<CallExpr>(Call.getOriginExpr());
  StringRef Name = calleeName(Call);
  if (!CE || isLastErrorQuery(Name))
    return;
  // Judged at the next CUDA call that is not a synchronization, or at the end
  // of the function: the runtime records a failing call's error until it is
  // read, so a last-error query then (or a check function the analyzer cannot
  // see, which may make one) reads it.
  if (isDiscarded(CE, C.getLocationContext()->getParentMap())) {
    ProgramStateRef State =
        C.getState()->set<GpumemDiscardedStatuses>(CE, C.getLocationContext());
    if (isCleanupCall(Name))
      State = State->add<GpumemCleanupStatuses>(CE);
    C.addTransition(State);
  }
}

static std::string discardedMessage(const Expr *Call, const ASTContext &Ctx) {
  return "the status " + calledName(Call, Ctx) +
         " returns is discarded; check it (or cast it to void if ignoring it "
         "is intended)";
}

void StatusChecker::checkPreCall(const CallEvent &Call,
                                 CheckerContext &C) const {
  if (!inUserCode(C))
    return;
  ProgramStateRef State = C.getState();
  StringRef Name = calleeName(Call);
  bool Launch = Name == "__cudaPushCallConfiguration";
  bool Cuda = Launch || isUserCudaCall(Call, C);
  if (isErrorText(Name))
    return;

  if (!Cuda) {
    // A launch check of the project's, or a function the analyzer cannot
    // see, which may well check the launch itself.
    // A named function, that is: a call through a pointer is not one.
    bool Opaque = Call.getDecl() && !Call.isInSystemHeader() &&
                  !Call.getRuntimeDefinition().getDecl();
    ProgramStateRef Next = State;
    if (LaunchChecks.contains(Name) || Opaque)
      Next = Next->remove<GpumemPendingLaunch>();
    // Another file's check function (checkCUDAError) may ask for the last
    // error; a timer or a logger does not, so the name must say so.
    if (LaunchChecks.contains(Name) || (Opaque && namesACheck(Name)))
      Next = Next->remove<GpumemDiscardedStatuses>()
                 ->remove<GpumemCleanupStatuses>();
    if (Next != State)
      C.addTransition(Next);
    return;
  }

  struct Finding {
    std::string Msg;
    const Expr *At;
    const LocationContext *Context;
  };
  llvm::SmallVector<Finding, 2> Findings;
  // A last-error query whose result is used reads the error of every call
  // before it (a successful call does not reset the record); a
  // synchronization between them (cudaCheckAsyncError's) changes nothing.
  // Any other CUDA call means the program went on unchecked.
  const auto *OE = dyn_cast_or_null<CallExpr>(Call.getOriginExpr());
  if (isLastErrorQuery(Name)) {
    if (OE && !isDiscarded(OE, C.getLocationContext()->getParentMap()))
      State = State->remove<GpumemDiscardedStatuses>()
                  ->remove<GpumemCleanupStatuses>();
  } else if (!isSynchronization(Name)) {
    // A release after a release (teardown, an error path's cleanup) leaves
    // the earlier releases' statuses to be judged later.
    bool Cleanup = isCleanupCall(Name);
    for (const auto &[Discarded, Context] :
         State->get<GpumemDiscardedStatuses>()) {
      if (Cleanup && State->contains<GpumemCleanupStatuses>(Discarded))
        continue;
      Findings.push_back({discardedMessage(Discarded, C.getASTContext()),
                          Discarded, Context});
      State = State->remove<GpumemDiscardedStatuses>(Discarded)
                  ->remove<GpumemCleanupStatuses>(Discarded);
    }
  }
  // A last-error query (an error-clearing cudaGetLastError() between the
  // call and the test of its status, say) leaves a stored status as it was.
  for (const auto &[Region, Stored] : State->get<GpumemStoredStatuses>()) {
    if (isLastErrorQuery(Name))
      break;
    std::string Msg = ("the status " + calledName(Stored.Call, C.getASTContext()) +
                       " returned is stored but not read before the next "
                       "CUDA call (" +
                       (Launch ? StringRef("a kernel launch") : Name) + ")")
                          .str();
    Findings.push_back({Msg, Stored.Call, Stored.Context});
    State = State->remove<GpumemStoredStatuses>(Region);
  }

  if (isLastErrorQuery(Name) || LaunchChecks.contains(Name)) {
    State = State->remove<GpumemPendingLaunch>();
  } else if (isSynchronization(Name)) {
    // The launch's error is still there for a query after it (the
    // synchronize-then-ask of cudaCheckAsyncError and its kind).
    if (State->get<GpumemPendingLaunch>())
      State = State->set<GpumemPendingLaunchSynced>(true);
  } else if (const Expr *Pending = State->get<GpumemPendingLaunch>()) {
    std::string Msg =
        ("the error state of this kernel launch is not read "
         "(cudaGetLastError or cudaPeekAtLastError) before the next CUDA "
         "call (" +
         (Launch ? StringRef("another launch") : Name) + ")")
            .str();
    Findings.push_back(
        {Msg, Pending, State->get<GpumemPendingLaunchContext>()});
    State = State->remove<GpumemPendingLaunch>();
  }
  if (Launch) {
    State = State->set<GpumemPendingLaunchSynced>(false);
    State = State->set<GpumemPendingLaunch>(Call.getOriginExpr());
    State = State->set<GpumemPendingLaunchContext>(C.getLocationContext());
  }
  if (Findings.empty()) {
    C.addTransition(State);
    return;
  }
  ExplodedNode *N = C.generateNonFatalErrorNode(State);
  for (const Finding &F : Findings)
    report(F.Msg, F.At, F.Context, N, C);
}

void StatusChecker::checkBind(SVal Loc, SVal, const Stmt *S, bool,
                              CheckerContext &C) const {
  const auto *VR = dyn_cast_or_null<VarRegion>(Loc.getAsRegion());
  if (!VR || !inUserCode(C) ||
      !isa<StackSpaceRegion>(VR->getRawMemorySpace()))
    return;
  const auto *CE = dyn_cast_or_null<CallExpr>(assignedValue(S));
  if (!CE || !isStatusType(CE->getType()))
    return;
  C.addTransition(C.getState()->set<GpumemStoredStatuses>(
      VR, StoredStatus{CE, C.getLocationContext()}));
}

void StatusChecker::checkLocation(SVal Loc, bool IsLoad, const Stmt *,
                                  CheckerContext &C) const {
  const MemRegion *R = Loc.getAsRegion();
  if (!IsLoad || !R)
    return;
  ProgramStateRef State = C.getState();
  if (State->get<GpumemStoredStatuses>(R))
    C.addTransition(State->remove<GpumemStoredStatuses>(R));
}

void StatusChecker::checkEndFunction(const ReturnStmt *,
                                     CheckerContext &C) const {
  ProgramStateRef State = C.getState();
  // A helper's unread statuses are its caller's to judge: a cudaGetLastError
  // right after the helper returns reads the error they recorded, and the
  // caller's next CUDA call reports them. Its variables die here, so a
  // status still unread in one is from now on a discarded one.
  if (!C.inTopFrame()) {
    ProgramStateRef Next = State;
    for (const auto &[Region, Stored] : State->get<GpumemStoredStatuses>()) {
      const auto *VR = dyn_cast<VarRegion>(Region);
      if (!VR || VR->getStackFrame() != C.getStackFrame())
        continue;
      Next = Next->remove<GpumemStoredStatuses>(Region)
                 ->set<GpumemDiscardedStatuses>(Stored.Call, Stored.Context);
    }
    if (Next != State)
      C.addTransition(Next);
    return;
  }
  ExplodedNode *N = nullptr;
  if (const Expr *Pending = State->get<GpumemPendingLaunch>())
    if (State->get<GpumemPendingLaunchSynced>()) {
      N = C.generateNonFatalErrorNode();
      report("the error state of this kernel launch is not read "
             "(cudaGetLastError or cudaPeekAtLastError) before the function "
             "returns; the synchronization after it does not read it",
             Pending, State->get<GpumemPendingLaunchContext>(), N, C);
    }
  // Releases whose statuses no CUDA call but other releases followed: the
  // program's teardown, or the cleanup of an error path that returns the
  // error. Nothing is left to act on such a status.
  for (const auto &[Call, Context] : State->get<GpumemDiscardedStatuses>()) {
    if (State->contains<GpumemCleanupStatuses>(Call))
      continue;
    if (!N)
      N = C.generateNonFatalErrorNode();
    report(discardedMessage(Call, C.getASTContext()), Call, Context, N, C);
  }
  for (const auto &[Region, Stored] : State->get<GpumemStoredStatuses>()) {
    const auto *VR = dyn_cast<VarRegion>(Region);
    if (!VR || VR->getStackFrame() != C.getStackFrame())
      continue;
    if (!N)
      N = C.generateNonFatalErrorNode();
    report(("the status " + calledName(Stored.Call, C.getASTContext()) +
            " returned is stored but never read"),
           Stored.Call, Stored.Context, N, C);
  }
}

} // namespace gpumem
