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
// and the tracking of the allocations they point to. A loop inside other
// loops counts as its whole nest: what the outer loops write (their
// counters) stays forgotten, so the path can leave them too. A nest that
// calls nothing and writes only local variables (a loop that checks
// results) is widened from the state before the widening instead, with
// only those variables forgotten: the engine's widening also forgets every
// global, and with them the pointers kept in global arrays.
//
//===----------------------------------------------------------------------===//

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

} // namespace

void MemoryChecker::checkBlockEntrance(const BlockEntrance &BE,
                                       CheckerContext &C) const {
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
  const Stmt *Nest = outermostLoop(BE.getBlock()->getTerminatorStmt(), PM);
  collectVars(Nest, PM, InLoop, WrittenInLoop);
  if (const auto *FD = dyn_cast<FunctionDecl>(LC->getDecl()))
    for (const ParmVarDecl *P : FD->parameters())
      InFunction.insert(P);

  if (writesOnlyLocals(Nest) && !BE.getBlock()->empty()) {
    // The state before the widening, with the nest's variables forgotten.
    llvm::SmallVector<const MemRegion *, 16> Regions;
    for (const VarDecl *VD : WrittenInLoop) {
      const DeclContext *DC = VD->getParentFunctionOrMethod();
      if (DC && Decl::castFromDeclContext(DC) == LC->getDecl())
        Regions.push_back(Before->getLValue(VD, LC).getAsRegion());
    }
    ProgramStateRef State = Before->invalidateRegions(
        Regions, ConstCFGElementRef(BE.getBlock(), 0), C.blockCount(), LC,
        /*CausesPointerEscape=*/true);
    C.addTransition(State);
    return;
  }

  ProgramStateRef State = C.getState();
  for (const VarDecl *VD : InFunction) {
    const DeclContext *DC = VD->getParentFunctionOrMethod();
    if (WrittenInLoop.count(VD) || !VD->getType()->isScalarType() || !DC ||
        Decl::castFromDeclContext(DC) != LC->getDecl())
      continue;
    Loc L = State->getLValue(VD, LC);
    SVal V = Before->getSVal(L);
    State = State->bindLoc(L, V, LC);
    SymbolRef Sym = allocationSymbol(V);
    if (const AllocState *AS = Sym ? getAlloc(Before, Sym) : nullptr)
      if (!getAlloc(State, Sym))
        State = setAlloc(State, Sym, *AS);
  }
  if (State != C.getState())
    C.addTransition(State);
}

} // namespace gpumem
