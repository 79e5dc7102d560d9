//===- StdCalls.cpp - The few standard library calls modelled exactly -----===//
//
// Part of gpumem. The analysis evaluates calls of the C++ standard library
// as calls of code it cannot see (c++-stdlib-inlining=false): their loops
// spent the node budget of long benchmark functions. Three calls are too
// common in sizes and buffer handling to leave unknown, and are evaluated
// here as the standard defines them, on scalars:
//   std::min(a, b)   (b < a) ? b : a
//   std::max(a, b)   (a < b) ? b : a
//   std::swap(a, b)  the two values exchanged
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

/// std::min or std::max: the result refers to one argument, chosen by a
/// comparison the path may not decide, in which case it splits.
bool evalMinMax(const CallEvent &Call, CheckerContext &C, bool Max) {
  const Expr *E = Call.getOriginExpr();
  SVal A = Call.getArgSVal(0), B = Call.getArgSVal(1);
  if (!E || !A.getAs<Loc>() || !B.getAs<Loc>())
    return false;
  ProgramStateRef State = C.getState();
  SValBuilder &SVB = C.getSValBuilder();
  SVal VA = State->getSVal(A.castAs<Loc>()), VB = State->getSVal(B.castAs<Loc>());
  // min takes b when b < a; max takes b when a < b.
  SVal Less = Max ? SVB.evalBinOp(State, BO_LT, VA, VB, SVB.getConditionType())
                  : SVB.evalBinOp(State, BO_LT, VB, VA, SVB.getConditionType());
  auto Cond = Less.getAs<DefinedOrUnknownSVal>();
  if (!Cond || Cond->isUnknown())
    return false;
  const LocationContext *LC = C.getLocationContext();
  auto [TakeB, TakeA] = State->assume(*Cond);
  if (TakeB)
    C.addTransition(TakeB->BindExpr(E, LC, B));
  if (TakeA)
    C.addTransition(TakeA->BindExpr(E, LC, A));
  return TakeA || TakeB;
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
    return evalMinMax(Call, C, Name == "max");
  if (Name == "swap" && FD->getReturnType()->isVoidType())
    return evalSwap(Call, C);
  return false;
}

} // namespace gpumem
