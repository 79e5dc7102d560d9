//===- StdCalls.cpp - The few standard library calls modelled exactly -----===//
//
// Part of gpumem. The analysis evaluates calls of the C++ standard library
// as calls of code it cannot see (c++-stdlib-inlining=false): their loops
// spent the node budget of long benchmark functions. Three calls are too
// common in sizes and buffer handling to leave unknown, and are evaluated
// here:
//   std::min(a, b)   on integers: a value at most a and at most b
//   std::max(a, b)   on integers: a value at least a and at least b
//   std::swap(a, b)  on scalars: the two values exchanged
// so that `std::min(n, 256)` is known to be at most 256 (no made-up path
// on which it is more), and after `std::swap(d_in, d_out)` each variable
// still holds an allocation the analysis tracks.
//
//===----------------------------------------------------------------------===//

#include "MemoryChecker.h"
#include "clang/AST/Decl.h"
#include "clang/StaticAnalyzer/Core/PathSensitive/CallEvent.h"
#include "clang/StaticAnalyzer/Core/PathSensitive/SValBuilder.h"

using namespace clang;
using namespace clang::ento;

namespace gpumem {
namespace {

/// The type both arguments of a two-argument std::min, std::max or
/// std::swap refer to, when it is a scalar; a null type otherwise.
QualType scalarPair(const FunctionDecl *FD) {
  if (FD->getNumParams() != 2)
    return QualType();
  QualType A = FD->getParamDecl(0)->getType(),
           B = FD->getParamDecl(1)->getType();
  if (!A->isReferenceType() || !B->isReferenceType())
    return QualType();
  QualType T = A->getPointeeType().getUnqualifiedType();
  if (T != B->getPointeeType().getUnqualifiedType() || !T->isScalarType())
    return QualType();
  return T;
}

/// std::min or std::max of integers: the result refers to a fresh value at
/// most (at least) both arguments. Not a split into the two choices: in
/// benchmark loops that clamp sizes every round, the split doubled the paths
/// each time and the node budget ran out before the end of the function.
bool evalMinMax(const CallEvent &Call, CheckerContext &C, QualType T,
                bool Max) {
  const Expr *E = Call.getOriginExpr();
  SVal A = Call.getArgSVal(0), B = Call.getArgSVal(1);
  if (!E || !T->isIntegralOrEnumerationType() || !A.getAs<Loc>() ||
      !B.getAs<Loc>())
    return false;
  ProgramStateRef State = C.getState();
  const LocationContext *LC = C.getLocationContext();
  SValBuilder &SVB = C.getSValBuilder();
  SVal VA = State->getSVal(A.castAs<Loc>(), T),
       VB = State->getSVal(B.castAs<Loc>(), T);
  DefinedOrUnknownSVal R =
      SVB.conjureSymbolVal(Call, T, C.blockCount());
  BinaryOperatorKind Op = Max ? BO_GE : BO_LE;
  for (SVal V : {VA, VB}) {
    auto Bound = SVB.evalBinOp(State, Op, R, V, SVB.getConditionType())
                     .getAs<DefinedOrUnknownSVal>();
    if (!Bound)
      return false;
    if (ProgramStateRef Kept = State->assume(*Bound, true))
      State = Kept;
  }
  const MemRegion *Temp =
      C.getStoreManager().getRegionManager().getCXXTempObjectRegion(E, LC);
  State = State->bindLoc(loc::MemRegionVal(Temp), R, LC);
  C.addTransition(State->BindExpr(E, LC, loc::MemRegionVal(Temp)));
  return true;
}

bool evalSwap(const CallEvent &Call, CheckerContext &C) {
  SVal A = Call.getArgSVal(0), B = Call.getArgSVal(1);
  if (!A.getAs<Loc>() || !B.getAs<Loc>())
    return false;
  ProgramStateRef State = C.getState();
  const LocationContext *LC = C.getLocationContext();
  SVal VA = State->getSVal(A.castAs<Loc>()), VB = State->getSVal(B.castAs<Loc>());
  State = State->bindLoc(A.castAs<Loc>(), VB, LC);
  State = State->bindLoc(B.castAs<Loc>(), VA, LC);
  C.addTransition(State);
  return true;
}

} // namespace

bool evalStdCall(const CallEvent &Call, CheckerContext &C) {
  const auto *FD = dyn_cast_or_null<FunctionDecl>(Call.getDecl());
  if (!FD || !FD->isInStdNamespace() || !FD->getIdentifier() ||
      scalarPair(FD).isNull())
    return false;
  StringRef Name = FD->getName();
  if (Name == "min" || Name == "max")
    return evalMinMax(Call, C, scalarPair(FD), Name == "max");
  if (Name == "swap" && FD->getReturnType()->isVoidType())
    return evalSwap(Call, C);
  return false;
}

} // namespace gpumem
