//===- Widening.cpp - Loop widening that forgets only what the loop changes ===//
//
// Part of gpumem. With widen-loops=true the engine, at the loop head's last
// visit, invalidates every local, parameter and global of the frame and lets
// the path leave the loop. That keeps the code after a long loop reachable,
// but it also forgets what the loop never touches: an allocation's pointer
// (its memory taken as escaped, so a leak after the loop is not seen) or a
// flag that decides whether the body checks a launch (a made-up path on
// which the body skips its check). Right after the widening, this puts back
// the values of the scalar locals and parameters the loop does not write,
// and the tracking of the allocations they point to, and the pointers of a
// loop that only exchanges its buffers (double buffering). A loop inside other
// loops counts as its whole nest: the integers the outer loops write (their
// counters) stay forgotten, so the path can leave them too; their pointers
// that the widened loop does not write are put back. A nest that
// calls nothing and writes only local variables (a loop that checks
// results) is widened from the state before the widening instead, with
// only those variables forgotten: the engine's widening also forgets every
// global, and with them the pointers kept in global arrays.
//
//===----------------------------------------------------------------------===//

#include "MemoryApi.h"
#include "MemoryChecker.h"
#include "clang/AST/ParentMap.h"
#include "clang/AST/StmtCXX.h"
#include "clang/Analysis/AnalysisDeclContext.h"
#include "clang/StaticAnalyzer/Core/PathSensitive/ExplodedGraph.h"
#include "clang/StaticAnalyzer/Core/PathSensitive/ProgramState.h"
#include "clang/StaticAnalyzer/Core/PathSensitive/SValBuilder.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace clang;
using namespace clang::ento;

namespace gpumem {
namespace {

using VarSet = llvm::SmallPtrSet<const VarDecl *, 16>;

/// The local variables \p S refers to (Seen), and those it may write
/// (Written): any use that is not a plain read of the value, and every
/// variable declared inside it.
void collectVars(const Stmt *S, const ParentMap &PM, VarSet &Seen,
                 VarSet &Written) {
  if (!S)
    return;
  if (const auto *DS = dyn_cast<DeclStmt>(S))
    for (const Decl *D : DS->decls())
      if (const auto *VD = dyn_cast<VarDecl>(D))
        Written.insert(VD);
  if (const auto *DR = dyn_cast<DeclRefExpr>(S))
    if (const auto *VD = dyn_cast<VarDecl>(DR->getDecl());
        VD && VD->hasLocalStorage()) {
      Seen.insert(VD);
      const auto *Cast = dyn_cast_or_null<ImplicitCastExpr>(PM.getParent(DR));
      if (!Cast || Cast->getCastKind() != CK_LValueToRValue)
        Written.insert(VD);
    }
  for (const Stmt *Child : S->children())
    collectVars(Child, PM, Seen, Written);
}

bool isLoop(const Stmt *S) {
  return isa_and_nonnull<ForStmt, WhileStmt, DoStmt, CXXForRangeStmt>(S);
}

/// The outermost loop of the function that contains \p Loop (Loop itself
/// when it is in no other). The engine counts a loop head's visits on the
/// whole path, not per entrance: once an inner loop was widened, the next
/// round of an outer loop reaches the inner head past the visit limit and
/// the path ends there. The widening forgets the frame's variables, the
/// outer loops' counters with them, and so lets the path leave the outer
/// loops as well; putting back the counters of the outer loops would make
/// a loop that the path cannot leave (a constant bound, an unrolled loop)
/// end every path at the inner head on its next round.
const Stmt *outermostLoop(const Stmt *Loop, const ParentMap &PM) {
  const Stmt *Outer = Loop;
  for (const Stmt *S = PM.getParent(Loop); S; S = PM.getParent(S))
    if (isLoop(S))
      Outer = S;
  return Outer;
}

/// The state before the engine widened the loop at this entrance, or null
/// when it did not.
ProgramStateRef stateBeforeWidening(const BlockEntrance &BE,
                                    CheckerContext &C) {
  const AnalyzerOptions &Opts = C.getAnalysisManager().options;
  if (!Opts.ShouldWidenLoops ||
      C.blockCount() != Opts.maxBlockVisitOnPath - 1 ||
      !isLoop(BE.getBlock()->getTerminatorStmt()))
    return nullptr;
  const ExplodedNode *Widened = C.getPredecessor();
  const ExplodedNode *Before = Widened ? Widened->getFirstPred() : nullptr;
  if (!Before || Before->getState() == Widened->getState())
    return nullptr;
  return Before->getState();
}

/// The value of a loop condition's operand in \p State: an integer
/// constant, a local or parameter, a field of one, casts and comparisons of
/// these; UnknownVal for anything else (a call, a load through a pointer).
SVal conditionValue(const Expr *E, ProgramStateRef State,
                    const LocationContext *LC, SValBuilder &SVB) {
  E = E->IgnoreParens();
  if (const auto *IC = dyn_cast<ImplicitCastExpr>(E)) {
    const Expr *Sub = IC->getSubExpr();
    if (IC->getCastKind() == CK_LValueToRValue) {
      if (const auto *DR = dyn_cast<DeclRefExpr>(Sub->IgnoreParens()))
        if (const auto *VD = dyn_cast<VarDecl>(DR->getDecl());
            VD && VD->hasLocalStorage() && VD->getType()->isIntegerType())
          return State->getSVal(State->getLValue(VD, LC));
      return UnknownVal();
    }
    if (IC->getCastKind() == CK_IntegralCast && E->getType()->isIntegerType())
      return SVB.evalCast(conditionValue(Sub, State, LC, SVB), E->getType(),
                          Sub->getType());
    return UnknownVal();
  }
  if (const auto *IL = dyn_cast<IntegerLiteral>(E))
    return SVB.makeIntVal(IL);
  if (const auto *BO = dyn_cast<BinaryOperator>(E)) {
    if (!BO->isComparisonOp() ||
        !BO->getLHS()->getType()->isIntegerType() ||
        !BO->getRHS()->getType()->isIntegerType())
      return UnknownVal();
    SVal L = conditionValue(BO->getLHS(), State, LC, SVB);
    SVal R = conditionValue(BO->getRHS(), State, LC, SVB);
    if (L.isUnknownOrUndef() || R.isUnknownOrUndef())
      return UnknownVal();
    return SVB.evalBinOp(State, BO->getOpcode(), L, R, BO->getType());
  }
  return UnknownVal();
}

/// A local variable of the function, not a reference (a write to a
/// reference writes what it refers to).
bool isPlainLocal(const Expr *E) {
  const auto *DR = dyn_cast<DeclRefExpr>(E->IgnoreParenImpCasts());
  const auto *VD = DR ? dyn_cast<VarDecl>(DR->getDecl()) : nullptr;
  return VD && VD->hasLocalStorage() && !VD->getType()->isReferenceType();
}

/// \p S calls nothing (no call, launch, construction, new or delete) and
/// writes nothing but local variables: what it changes is what
/// collectVars() takes as written.
bool writesOnlyLocals(const Stmt *S) {
  if (!S)
    return true;
  if (isa<CallExpr, CXXConstructExpr, CXXNewExpr, CXXDeleteExpr, LambdaExpr,
          AsmStmt, CXXThrowExpr>(S))
    return false;
  if (const auto *BO = dyn_cast<BinaryOperator>(S))
    if (BO->isAssignmentOp() && !isPlainLocal(BO->getLHS()))
      return false;
  if (const auto *UO = dyn_cast<UnaryOperator>(S))
    if (UO->isIncrementDecrementOp() && !isPlainLocal(UO->getSubExpr()))
      return false;
  for (const Stmt *Child : S->children())
    if (!writesOnlyLocals(Child))
      return false;
  return true;
}

const Expr *loopCondition(const Stmt *Loop) {
  if (const auto *FS = dyn_cast<ForStmt>(Loop))
    return FS->getCond();
  if (const auto *WS = dyn_cast<WhileStmt>(Loop))
    return WS->getCond();
  return nullptr;
}

/// The loop could be left on this path before the widening: its condition,
/// on integers the path knows as symbols (`n < repeat`, `repeat` unknown),
/// may be false. The engine then explored the exit on the earlier visits of
/// the head already (the loop run 0, 1, 2 times), and a widened path only
/// walks the rest of the function once more.
bool exitWasFeasible(const Stmt *Loop, ProgramStateRef Before,
                     CheckerContext &C) {
  const Expr *Cond = loopCondition(Loop);
  if (!Cond)
    return false;
  SVal V = conditionValue(Cond, Before, C.getLocationContext(),
                          C.getSValBuilder());
  auto D = V.getAs<DefinedSVal>();
  if (!D)
    return false;
  auto [True, False] = Before->assume(*D);
  return True && False;
}


/// The state at the previous visit of the loop head \p Head in \p SF's frame
/// on the path that led to \p Before: the round before the widening. Null
/// when it is not found within the node budget.
ProgramStateRef stateAtPreviousRound(const ExplodedNode *Before,
                                     const CFGBlock *Head,
                                     const StackFrameContext *SF) {
  unsigned Budget = 200000;
  for (const ExplodedNode *N = Before ? Before->getFirstPred() : nullptr;
       N && Budget; N = N->getFirstPred(), --Budget) {
    if (N->getStackFrame() != SF)
      continue;
    if (auto BE = N->getLocation().getAs<BlockEntrance>())
      if (BE->getBlock() == Head)
        return N->getState();
  }
  return nullptr;
}

/// Each scalar variable, and each element of a small array of scalars,
/// that \p State binds outside the frame \p SF: the callers' variables and
/// the globals the path has written.
class OutsideVariables : public StoreManager::BindingsHandler {
  const StackFrameContext *SF;

public:
  llvm::SmallVector<const TypedValueRegion *, 16> Regions;
  explicit OutsideVariables(const StackFrameContext *SF) : SF(SF) {}
  bool HandleBinding(StoreManager &SM, Store, const MemRegion *R,
                     SVal) override {
    const auto *VR = dyn_cast<VarRegion>(R);
    if (!VR || VR->getStackFrame() == SF ||
        llvm::is_contained(Regions, VR))
      return true;
    if (!VR->getStackFrame() &&
        !isa<GlobalsSpaceRegion>(VR->getRawMemorySpace()))
      return true;
    QualType T = VR->getValueType();
    if (T->isScalarType()) {
      Regions.push_back(VR);
      return true;
    }
    const auto *AT = dyn_cast<ConstantArrayType>(T.getCanonicalType());
    if (!AT || !AT->getElementType()->isScalarType() ||
        AT->getSize().ugt(64))
      return true;
    MemRegionManager &MRM = SM.getRegionManager();
    SValBuilder &SVB = SM.getSValBuilder();
    for (uint64_t I = 0, E = AT->getSize().getZExtValue(); I != E; ++I)
      Regions.push_back(MRM.getElementRegion(AT->getElementType(),
                                             SVB.makeArrayIndex(I), VR,
                                             SVB.getContext()));
    return true;
  }
};

/// \p VD is a variable of the function \p LC analyses (not of a caller, a
/// lambda or a block inside it).
bool ofFunction(const VarDecl *VD, const LocationContext *LC) {
  const DeclContext *DC = VD->getParentFunctionOrMethod();
  return DC && Decl::castFromDeclContext(DC) == LC->getDecl();
}

/// \p State with the value \p Before gave \p R put back, and the
/// allocation that value points to tracked again.
ProgramStateRef putBack(ProgramStateRef State, ProgramStateRef Before,
                        Loc L, const LocationContext *LC) {
  SVal V = Before->getSVal(L);
  State = State->bindLoc(L, V, LC);
  SymbolRef Sym = allocationSymbol(V);
  if (const AllocState *AS = Sym ? getAlloc(Before, Sym) : nullptr) {
    const AllocState *Now = getAlloc(State, Sym);
    if (!Now || ((Now->Flags & FlagEscaped) && !(AS->Flags & FlagEscaped)))
      State = setAlloc(State, Sym, *AS);
  }
  return State;
}

/// The loop writes a caller's variable only through a pointer or a
/// reference it is given (a benchmark helper that runs `kernel(args...)`
/// a thousand times with the caller's buffers as forwarding references),
/// and the engine's widening forgets every one it can reach. Those whose
/// value the last round did not change are put back: the loop body does not
/// write them.
ProgramStateRef restoreOutside(ProgramStateRef State, ProgramStateRef Before,
                               ProgramStateRef Previous,
                               const LocationContext *LC) {
  OutsideVariables Vars(LC->getStackFrame());
  Before->getStateManager().iterBindings(Before, Vars);
  for (const TypedValueRegion *R : Vars.Regions) {
    loc::MemRegionVal L(R);
    if (Before->getSVal(L) == Previous->getSVal(L))
      State = putBack(State, Before, L, LC);
  }
  return State;
}

/// The loop only exchanges the allocations its pointers hold (double
/// buffering: `swap(in, out)`, `t = a; a = b; b = t;`): the pointers of the
/// function it writes that hold a tracked allocation before the widening held
/// the same allocations between them on the round before. Their values before
/// the widening are put back: one of the orders the rounds leave them in, and
/// the allocations stay tracked through the loop.
ProgramStateRef restoreExchanged(ProgramStateRef State, ProgramStateRef Before,
                                 ProgramStateRef Previous,
                                 const VarSet &Written,
                                 const LocationContext *LC) {
  llvm::SmallVector<Loc, 4> Held;
  llvm::SmallPtrSet<SymbolRef, 4> Now, Then;
  for (const VarDecl *VD : Written) {
    if (!VD->getType()->isAnyPointerType() || !ofFunction(VD, LC))
      continue;
    Loc L = Before->getLValue(VD, LC);
    SymbolRef B = allocationSymbol(Before->getSVal(L));
    SymbolRef P = allocationSymbol(Previous->getSVal(L));
    if (B && getAlloc(Before, B)) {
      Held.push_back(L);
      Now.insert(B);
    }
    if (P && getAlloc(Previous, P))
      Then.insert(P);
  }
  if (Held.empty() || Now.size() != Then.size())
    return State;
  for (SymbolRef Sym : Now)
    if (!Then.count(Sym))
      return State;
  for (Loc L : Held)
    State = putBack(State, Before, L, LC);
  return State;
}

/// How the nest writes an integer local: 0 not at all, 1 only stepping it
/// up (`++`, `+= constant`), -1 only down, 2 any other way (an assignment,
/// its address taken, a reference bound to it). Its declaration's
/// initializer is not a write here.
int combineDirections(int A, int B) {
  if (A == 0 || A == B)
    return B;
  return B == 0 ? A : 2;
}

int counterDirection(const Stmt *S, const VarDecl *VD, const ParentMap &PM) {
  if (!S)
    return 0;
  auto IsVar = [VD](const Expr *E) {
    const auto *DR = dyn_cast<DeclRefExpr>(E->IgnoreParenImpCasts());
    return DR && DR->getDecl() == VD;
  };
  int Dir = 0;
  if (const auto *UO = dyn_cast<UnaryOperator>(S);
      UO && UO->isIncrementDecrementOp() && IsVar(UO->getSubExpr())) {
    Dir = UO->isIncrementOp() ? 1 : -1;
  } else if (const auto *CA = dyn_cast<CompoundAssignOperator>(S);
             CA && IsVar(CA->getLHS())) {
    const auto *IL =
        dyn_cast<IntegerLiteral>(CA->getRHS()->IgnoreParenImpCasts());
    if (!IL || IL->getValue().isZero() ||
        (CA->getOpcode() != BO_AddAssign && CA->getOpcode() != BO_SubAssign))
      return 2;
    Dir = CA->getOpcode() == BO_AddAssign ? 1 : -1;
    return combineDirections(Dir, counterDirection(CA->getRHS(), VD, PM));
  } else if (const auto *DR = dyn_cast<DeclRefExpr>(S);
             DR && DR->getDecl() == VD) {
    // A read, or the operand of a step counted above.
    const Stmt *P = PM.getParentIgnoreParens(DR);
    const auto *Cast = dyn_cast_or_null<ImplicitCastExpr>(P);
    const auto *Step = dyn_cast_or_null<UnaryOperator>(P);
    const auto *Compound = dyn_cast_or_null<CompoundAssignOperator>(P);
    if ((Cast && Cast->getCastKind() == CK_LValueToRValue) ||
        (Step && Step->isIncrementDecrementOp()) ||
        (Compound && Compound->getLHS()->IgnoreParens() == DR))
      return 0;
    return 2;
  }
  for (const Stmt *Child : S->children()) {
    Dir = combineDirections(Dir, counterDirection(Child, VD, PM));
    if (Dir == 2)
      return 2;
  }
  return Dir;
}

/// After the widening, each counter of the nest is at least (or at most)
/// the value it had before: the rounds the path already took are not
/// undone. Without it `if (step == 0) free(p);` in a widened 10-step loop
/// was taken again on a made-up round 0.
ProgramStateRef keepCounters(ProgramStateRef State, ProgramStateRef Before,
                             const VarSet &Written, const Stmt *Nest,
                             const LocationContext *LC, SValBuilder &SVB) {
  const ParentMap &PM = LC->getParentMap();
  for (const VarDecl *VD : Written) {
    if (!VD->getType()->isIntegerType() || VD->getType()->isBooleanType())
      continue;
    if (!ofFunction(VD, LC))
      continue;
    int Dir = counterDirection(Nest, VD, PM);
    if (Dir != 1 && Dir != -1)
      continue;
    Loc L = State->getLValue(VD, LC);
    SVal Old = Before->getSVal(L), New = State->getSVal(L);
    if (Old.isUnknownOrUndef() || New.isUnknownOrUndef() || Old == New)
      continue;
    SVal Cond = SVB.evalBinOp(State, Dir > 0 ? BO_GE : BO_LE, New, Old,
                              SVB.getConditionType());
    auto D = Cond.getAs<DefinedOrUnknownSVal>();
    if (!D)
      continue;
    if (ProgramStateRef Kept = State->assume(*D, true))
      State = Kept;
  }
  return State;
}

/// The number of rounds of a `for` loop that clang's unroll-loops follows
/// one by one: `for (int i = A; i < B; i++)` with A and B integer literals
/// (any comparison, either side); 0 when the loop is not of that form.
uint64_t literalTripCount(const Stmt *Loop) {
  const auto *FS = dyn_cast_or_null<ForStmt>(Loop);
  const auto *Cond =
      FS ? dyn_cast_or_null<BinaryOperator>(FS->getCond()) : nullptr;
  if (!Cond || !Cond->isComparisonOp())
    return 0;
  const auto *Bound =
      dyn_cast<IntegerLiteral>(Cond->getRHS()->IgnoreParenImpCasts());
  if (!Bound)
    Bound = dyn_cast<IntegerLiteral>(Cond->getLHS()->IgnoreParenImpCasts());
  const Expr *Start = nullptr;
  if (const auto *DS = dyn_cast_or_null<DeclStmt>(FS->getInit());
      DS && DS->isSingleDecl())
    if (const auto *VD = dyn_cast<VarDecl>(DS->getSingleDecl()))
      Start = VD->getInit();
  if (const auto *BO = dyn_cast_or_null<BinaryOperator>(FS->getInit());
      BO && BO->getOpcode() == BO_Assign)
    Start = BO->getRHS();
  const auto *Init =
      Start ? dyn_cast<IntegerLiteral>(Start->IgnoreParenImpCasts()) : nullptr;
  if (!Bound || !Init)
    return 0;
  llvm::APInt B = Bound->getValue(), I = Init->getValue();
  if (B.getBitWidth() != I.getBitWidth())
    return 0;
  return (B.sge(I) ? B - I : I - B).getLimitedValue();
}

/// \p S calls a function that allocates or releases memory the checker
/// tracks (by name, as written).
bool handlesMemory(const Stmt *S) {
  if (!S)
    return false;
  if (const auto *CE = dyn_cast<CallExpr>(S))
    if (const FunctionDecl *FD = CE->getDirectCallee())
      if (const IdentifierInfo *II = FD->getIdentifier())
        if (findAllocationNamed(II->getName()) ||
            findReleaseNamed(II->getName()))
          return true;
  for (const Stmt *Child : S->children())
    if (handlesMemory(Child))
      return true;
  return false;
}

/// Every allocation the path tracks is held by a scalar variable (a local,
/// a parameter or a global): none only in an array element or a field,
/// which the engine's widening forgets and nothing puts back.
class HeldInScalars : public StoreManager::BindingsHandler {
  ProgramStateRef State;

public:
  bool Scalars = true;
  explicit HeldInScalars(ProgramStateRef State) : State(State) {}
  bool HandleBinding(StoreManager &, Store, const MemRegion *R,
                     SVal V) override {
    SymbolRef Sym = allocationSymbol(V);
    // The store names an array's or a record's bindings by the variable.
    const auto *VR = dyn_cast<VarRegion>(R);
    if (!Sym || !getAlloc(State, Sym) ||
        (VR && VR->getValueType()->isScalarType()))
      return true;
    Scalars = false;
    return false;
  }
};

/// Loops of more rounds than this are widened rather than unrolled when
/// unrolling them buys nothing (see forgoUnrolling).
constexpr uint64_t MaxRoundsUnrolled = 16;

/// clang's unroll-loops follows a loop of a literal trip count (up to 128)
/// round by round, and the engine's default order explores rounds of code
/// it has seen after every path into new code: in a long main, or a
/// benchmark helper called several times, a 100-round warm-up loop waits
/// behind the rest of the function until the node budget is spent, and
/// nothing after it is analysed. A loop that allocates and releases nothing,
/// outside any other loop, while every tracked allocation is held in a
/// scalar variable (all the widening puts back), is widened instead: a
/// second successor (a sink) at its head's first entrance makes the engine
/// stop unrolling it at the next round (unroll-loops gives up on a loop
/// whose round branched), and the head's visit limit then widens it. The
/// branch is made at the first entrance of the loop's body: the engine
/// looks for it in the nodes after the head's entrance.
bool forgoUnrolling(const BlockEntrance &BE, CheckerContext &C) {
  if (C.blockCount() != 1)
    return false;
  const Stmt *Loop = nullptr;
  for (const CFGBlock *Pred : BE.getBlock()->preds())
    if (Pred && isa_and_nonnull<ForStmt>(Pred->getTerminatorStmt()) &&
        Pred->succ_size() == 2 && *Pred->succ_begin() == BE.getBlock())
      Loop = Pred->getTerminatorStmt();
  if (literalTripCount(Loop) <= MaxRoundsUnrolled)
    return false;
  const LocationContext *LC = C.getLocationContext();
  const ParentMap &PM = LC->getParentMap();
  if (outermostLoop(Loop, PM) != Loop || handlesMemory(Loop))
    return false;
  ProgramStateRef State = C.getState();
  HeldInScalars Held(State);
  State->getStateManager().iterBindings(State, Held);
  if (!Held.Scalars)
    return false;
  static SimpleProgramPointTag Sink("gpumem.Memory", "widen, not unroll");
  static SimpleProgramPointTag Keep("gpumem.Memory", "long loop entered");
  C.generateSink(State, C.getPredecessor(), &Sink);
  C.addTransition(State, C.getPredecessor(), &Keep);
  return true;
}

} // namespace

void MemoryChecker::checkBlockEntrance(const BlockEntrance &BE,
                                       CheckerContext &C) const {
  if (forgoUnrolling(BE, C))
    return;
  ProgramStateRef Before = stateBeforeWidening(BE, C);
  if (!Before)
    return;
  // Widening is for loops the path cannot leave within the visits it is
  // allowed (a constant bound past unroll-loops' limit, a condition on values
  // the loop changes); a loop with an unknown bound was already left on the
  // earlier visits, and its widened path doubles the work after the loop,
  // which for a few such loops in a row spends the budget before the
  // function's end.
  if (exitWasFeasible(BE.getBlock()->getTerminatorStmt(), Before, C)) {
    C.generateSink(C.getState(), C.getPredecessor());
    return;
  }
  const LocationContext *LC = C.getLocationContext();
  const ParentMap &PM = LC->getParentMap();
  VarSet InFunction, WrittenInFunction, InLoop, WrittenInLoop;
  collectVars(LC->getDecl()->getBody(), PM, InFunction, WrittenInFunction);
  const Stmt *Loop = BE.getBlock()->getTerminatorStmt();
  const Stmt *Nest = outermostLoop(Loop, PM);
  collectVars(Nest, PM, InLoop, WrittenInLoop);
  if (Nest != Loop) {
    // The outer loops' pointers that this loop does not write (a buffer the
    // round allocated before it) keep their values: only what may decide
    // whether the path leaves the nest (integers, the counters) is forgotten.
    VarSet InInner, WrittenInInner;
    collectVars(Loop, PM, InInner, WrittenInInner);
    llvm::SmallVector<const VarDecl *, 8> Kept;
    for (const VarDecl *VD : WrittenInLoop)
      if (VD->getType()->isAnyPointerType() && !WrittenInInner.count(VD))
        Kept.push_back(VD);
    for (const VarDecl *VD : Kept)
      WrittenInLoop.erase(VD);
  }
  if (const auto *FD = dyn_cast<FunctionDecl>(LC->getDecl()))
    for (const ParmVarDecl *P : FD->parameters())
      InFunction.insert(P);

  if (writesOnlyLocals(Nest) && !BE.getBlock()->empty()) {
    // The state before the widening, with the nest's variables forgotten.
    llvm::SmallVector<const MemRegion *, 16> Regions;
    for (const VarDecl *VD : WrittenInLoop) {
      if (ofFunction(VD, LC))
        Regions.push_back(Before->getLValue(VD, LC).getAsRegion());
    }
    ProgramStateRef State = Before->invalidateRegions(
        Regions, ConstCFGElementRef(BE.getBlock(), 0), C.blockCount(), LC,
        /*CausesPointerEscape=*/true);
    C.addTransition(keepCounters(State, Before, WrittenInLoop, Nest, LC,
                                 C.getSValBuilder()));
    return;
  }

  // The engine's widened state, with what the nest does not write put back:
  // the function's scalars it never assigns, its references (a reference is
  // never re-seated), and outside the function what the last round left
  // unchanged.
  ProgramStateRef State = C.getState();
  for (const VarDecl *VD : InFunction) {
    if (!ofFunction(VD, LC))
      continue;
    bool Reference = VD->getType()->isReferenceType();
    if (!Reference &&
        (WrittenInLoop.count(VD) || !VD->getType()->isScalarType()))
      continue;
    State = putBack(State, Before, State->getLValue(VD, LC), LC);
  }
  if (ProgramStateRef Previous = stateAtPreviousRound(
          C.getPredecessor()->getFirstPred(), BE.getBlock(),
          LC->getStackFrame())) {
    State = restoreOutside(State, Before, Previous, LC);
    State = restoreExchanged(State, Before, Previous, WrittenInLoop, LC);
  }
  State = keepCounters(State, Before, WrittenInLoop, Nest, LC,
                       C.getSValBuilder());
  if (State != C.getState())
    C.addTransition(State);
}

} // namespace gpumem
