//===- Facts.cpp - What a function does with the pointers it is given ---===//
//
// Part of gpumem. The facts are read from the body's syntax, so they are
// cheap (no path is followed) and say only what holds on every path that
// returns normally: a release under a condition other than a null test of
// the pointer, or after an early return the body writes itself (not one a
// check macro expands to), is no fact.
//
//===----------------------------------------------------------------------===//

#include "Facts.h"
#include "MemoryApi.h"
#include "clang/AST/ASTContext.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/Mangle.h"
#include "clang/AST/ParentMap.h"
#include "clang/AST/StmtCXX.h"
#include "clang/Basic/SourceManager.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include <memory>

using namespace clang;

namespace gpumem {
namespace {

const ParmVarDecl *paramOf(const Expr *E) {
  E = E->IgnoreParenCasts();
  if (const auto *DR = dyn_cast<DeclRefExpr>(E))
    return dyn_cast<ParmVarDecl>(DR->getDecl());
  return nullptr;
}

bool isPointerOrPointerRef(QualType T) {
  return T->isPointerType() ||
         (T->isReferenceType() && T.getNonReferenceType()->isPointerType());
}

/// Does \p S refer to a variable other than \p P?
bool refersToOtherThan(const Stmt *S, const ParmVarDecl *P) {
  if (!S)
    return false;
  if (const auto *DR = dyn_cast<DeclRefExpr>(S))
    if (isa<VarDecl>(DR->getDecl()) && DR->getDecl() != P)
      return true;
  for (const Stmt *Child : S->children())
    if (refersToOtherThan(Child, P))
      return true;
  return false;
}

/// A test of \p P alone (`if (p)`, `if (p != NULL)`, `if (!p) return;`).
bool isNullTest(const Expr *Cond, const ParmVarDecl *P) {
  return P && !refersToOtherThan(Cond, P);
}

bool isOnce(const DoStmt *DS, const ASTContext &Ctx) {
  Expr::EvalResult R;
  return DS->getCond()->EvaluateAsInt(R, Ctx) && R.Val.getInt() == 0;
}

class Learner {
  const FunctionDecl *FD;
  const ASTContext &Ctx;
  ParentMap PM;
  llvm::SmallVector<const Stmt *, 4> Exits; ///< Returns, gotos, throws.

  void collectExits(const Stmt *S) {
    if (!S)
      return;
    if (isa<ReturnStmt, GotoStmt, CXXThrowExpr>(S))
      Exits.push_back(S);
    for (const Stmt *Child : S->children())
      collectExits(Child);
  }

  bool within(const Stmt *S, const Stmt *Ancestor) const {
    for (; S; S = PM.getParent(S))
      if (S == Ancestor)
        return true;
    return false;
  }

  /// \p S runs on every path through the body that reaches its end, or
  /// only when \p P is not null.
  bool unconditional(const Stmt *S, const ParmVarDecl *P) {
    const Stmt *Body = FD->getBody();
    for (const Stmt *Cur = S, *Par = PM.getParent(S); Cur != Body;
         Cur = Par, Par = PM.getParent(Par)) {
      if (!Par)
        return false;
      if (const auto *IS = dyn_cast<IfStmt>(Par)) {
        if (IS->getCond() != Cur && !isNullTest(IS->getCond(), P))
          return false;
      } else if (const auto *DS = dyn_cast<DoStmt>(Par)) {
        if (!isOnce(DS, Ctx))
          return false;
      } else if (const auto *BO = dyn_cast<BinaryOperator>(Par)) {
        if (BO->isLogicalOp() && BO->getRHS() == Cur)
          return false;
      } else if (isa<ForStmt, WhileStmt, CXXForRangeStmt, SwitchStmt,
                     ConditionalOperator, BinaryConditionalOperator,
                     LambdaExpr, CXXTryStmt, CXXCatchStmt>(Par)) {
        return false;
      }
    }
    // An exit the body writes before it, not under a test of P alone.
    const SourceManager &SM = Ctx.getSourceManager();
    for (const Stmt *Exit : Exits) {
      if (within(S, Exit))
        continue;
      if (Exit->getBeginLoc().isMacroID() ||
          !SM.isBeforeInTranslationUnit(Exit->getBeginLoc(),
                                        S->getBeginLoc()))
        continue;
      const auto *IS = dyn_cast_or_null<IfStmt>(PM.getParent(Exit));
      if (!IS || !isNullTest(IS->getCond(), P))
        return false;
    }
    return true;
  }

  int indexOf(const ParmVarDecl *P) const {
    for (unsigned I = 0; I < FD->getNumParams(); ++I)
      if (FD->getParamDecl(I) == P)
        return I;
    return -1;
  }

public:
  Facts Out;
  llvm::SmallVector<bool, 4> Tainted; ///< Per parameter: not only read.

  explicit Learner(const FunctionDecl *FD)
      : FD(FD), Ctx(FD->getASTContext()), PM(FD->getBody()),
        Tainted(FD->getNumParams(), false) {
    collectExits(FD->getBody());
  }

  void add(FactKind K, const ParmVarDecl *P, StringRef Call) {
    int I = P ? indexOf(P) : -1;
    if (P && I < 0)
      return;
    for (const Fact &F : Out)
      if (F.Param == I && F.Kind == K)
        return;
    Out.push_back({K, I, Call.str()});
    if (I >= 0)
      Tainted[I] = true;
  }

  void taint(const ParmVarDecl *P) {
    int I = indexOf(P);
    if (I >= 0)
      Tainted[I] = true;
  }

  /// A modelled release or allocation call.
  void visitCall(const CallExpr *CE) {
    const FunctionDecl *Callee = CE->getDirectCallee();
    if (!Callee || !Callee->isExternC() || !Callee->getIdentifier())
      return;
    StringRef Name = Callee->getName();
    if (const ReleaseSpec *RS = findReleaseNamed(Name)) {
      if (RS->PtrArg >= CE->getNumArgs())
        return;
      const ParmVarDecl *P = paramOf(CE->getArg(RS->PtrArg));
      if (!P || !isPointerOrPointerRef(P->getType()))
        return;
      if (unconditional(CE, P))
        add(FactKind::Releases, P, RS->Name);
      else
        taint(P);
      return;
    }
    const AllocSpec *AS = findAllocationNamed(Name);
    if (!AS || AS->OutArg < 0 || unsigned(AS->OutArg) >= CE->getNumArgs() ||
        AS->PitchedPtr)
      return;
    const Expr *Out = CE->getArg(AS->OutArg)->IgnoreParenCasts();
    const ParmVarDecl *P = nullptr;
    if (const auto *UO = dyn_cast<UnaryOperator>(Out);
        UO && UO->getOpcode() == UO_AddrOf) {
      P = paramOf(UO->getSubExpr());
      if (P && !P->getType()->isReferenceType())
        P = nullptr; // &p of a local copy of the caller's pointer
    } else {
      P = paramOf(Out);
      if (P && !P->getType()->isPointerType())
        P = nullptr;
    }
    if (!P)
      return;
    if (unconditional(CE, nullptr))
      add(FactKind::Allocates, P, AS->Name);
    else
      taint(P);
  }

  /// How \p DR, a use of a pointer parameter, uses it: a read, or a way to
  /// hand it on (taint).
  void visitUse(const DeclRefExpr *DR, const ParmVarDecl *P) {
    const Stmt *Cur = DR;
    const Stmt *Par = PM.getParentIgnoreParenCasts(DR);
    // Through the loads and the arithmetic that keep pointing into it.
    while (Par) {
      if (const auto *BO = dyn_cast<BinaryOperator>(Par);
          BO && BO->isAdditiveOp()) {
        Cur = Par;
        Par = PM.getParentIgnoreParenCasts(Par);
        continue;
      }
      break;
    }
    if (!Par)
      return;
    if (isa<ArraySubscriptExpr, MemberExpr>(Par))
      return;
    if (const auto *UO = dyn_cast<UnaryOperator>(Par)) {
      if (UO->getOpcode() == UO_Deref || UO->getOpcode() == UO_LNot)
        return;
      if (UO->isIncrementDecrementOp() && !P->getType()->isReferenceType())
        return;
      return taint(P);
    }
    if (const auto *BO = dyn_cast<BinaryOperator>(Par)) {
      if (BO->isComparisonOp() || BO->isLogicalOp())
        return;
      // Into a local variable of this function (a row pointer); into
      // anything else (a field, a global, *out) it is handed on.
      if (BO->isAssignmentOp() && BO->getLHS()->IgnoreParenCasts() != Cur) {
        const auto *L = dyn_cast<DeclRefExpr>(BO->getLHS()->IgnoreParens());
        const auto *VD = L ? dyn_cast<VarDecl>(L->getDecl()) : nullptr;
        if (VD && VD->hasLocalStorage() && !VD->getType()->isReferenceType())
          return;
      }
      return taint(P);
    }
    if (isa<IfStmt, WhileStmt, ForStmt, ConditionalOperator>(Par))
      return;
    if (const auto *DS = dyn_cast<DeclStmt>(Par)) {
      for (const Decl *D : DS->decls())
        if (const auto *VD = dyn_cast<VarDecl>(D))
          if (VD->getType()->isReferenceType() || !VD->hasLocalStorage())
            return taint(P);
      return;
    }
    if (const auto *CE = dyn_cast<CallExpr>(Par)) {
      // A kernel launch, or a call of the C library or CUDA (which keep
      // nothing they are given); the releases were judged above.
      if (isa<CUDAKernelCallExpr>(CE))
        return;
      const FunctionDecl *Callee = CE->getDirectCallee();
      if (Callee && Callee->isExternC() && Callee->getIdentifier() &&
          (Ctx.getSourceManager().isInSystemHeader(Callee->getLocation()) ||
           isCudaApiName(Callee->getName())) &&
          !findReleaseNamed(Callee->getName()))
        return;
      return taint(P);
    }
    taint(P);
  }

  void visit(const Stmt *S) {
    if (!S)
      return;
    if (const auto *CE = dyn_cast<CallExpr>(S))
      visitCall(CE);
    if (const auto *DR = dyn_cast<DeclRefExpr>(S))
      if (const auto *P = dyn_cast<ParmVarDecl>(DR->getDecl()))
        if (isPointerOrPointerRef(P->getType()))
          visitUse(DR, P);
    if (isa<LambdaExpr>(S)) {
      // A lambda may keep what it captures.
      for (unsigned I = 0; I < FD->getNumParams(); ++I)
        Tainted[I] = true;
      return;
    }
    for (const Stmt *Child : S->children())
      visit(Child);
  }

  /// Every return gives back the same parameter, or the same local variable
  /// that an allocation fills (null on the error paths).
  void visitReturns() {
    if (!FD->getReturnType()->isPointerType() || Exits.empty())
      return;
    const ValueDecl *Same = nullptr;
    for (const Stmt *Exit : Exits) {
      const auto *RS = dyn_cast<ReturnStmt>(Exit);
      if (!RS || !RS->getRetValue())
        return;
      const Expr *V = RS->getRetValue()->IgnoreParenCasts();
      if (V->isNullPointerConstant(const_cast<ASTContext &>(Ctx),
                                   Expr::NPC_ValueDependentIsNotNull))
        continue;
      const auto *DR = dyn_cast<DeclRefExpr>(V);
      if (!DR || (Same && DR->getDecl() != Same))
        return;
      Same = DR->getDecl();
    }
    if (const auto *P = dyn_cast_or_null<ParmVarDecl>(Same)) {
      add(FactKind::Returns, P, "");
      return;
    }
    const auto *Local = dyn_cast_or_null<VarDecl>(Same);
    if (Local && Local->hasLocalStorage())
      findReturnedAllocation(FD->getBody(), Local);
  }

  void findReturnedAllocation(const Stmt *S, const VarDecl *Local) {
    if (!S)
      return;
    if (const auto *CE = dyn_cast<CallExpr>(S)) {
      const FunctionDecl *Callee = CE->getDirectCallee();
      const AllocSpec *AS = Callee && Callee->isExternC() &&
                                    Callee->getIdentifier()
                                ? findAllocationNamed(Callee->getName())
                                : nullptr;
      if (AS && AS->OutArg >= 0 && unsigned(AS->OutArg) < CE->getNumArgs() &&
          !AS->PitchedPtr) {
        const auto *UO = dyn_cast<UnaryOperator>(
            CE->getArg(AS->OutArg)->IgnoreParenCasts());
        const auto *DR = UO && UO->getOpcode() == UO_AddrOf
                             ? dyn_cast<DeclRefExpr>(
                                   UO->getSubExpr()->IgnoreParenCasts())
                             : nullptr;
        if (DR && DR->getDecl() == Local && unconditional(CE, nullptr))
          add(FactKind::Allocates, nullptr, AS->Name);
      }
    }
    for (const Stmt *Child : S->children())
      findReturnedAllocation(Child, Local);
  }
};

} // namespace

Facts learnFacts(const FunctionDecl *FD) {
  if (!FD || !FD->hasBody() || !FD->getBody() || FD->isVariadic())
    return {};
  FD = cast<FunctionDecl>(FD->getDefinition() ? FD->getDefinition() : FD);
  Learner L(FD);
  L.visit(FD->getBody());
  L.visitReturns();
  for (unsigned I = 0; I < FD->getNumParams(); ++I) {
    const ParmVarDecl *P = FD->getParamDecl(I);
    if (!L.Tainted[I] && P->getType()->isPointerType() &&
        !P->getType()->getPointeeType()->isPointerType())
      L.Out.push_back({FactKind::Reads, int(I), ""});
  }
  return L.Out;
}

std::string factName(const FunctionDecl *FD) {
  ASTNameGenerator Names(FD->getASTContext());
  return Names.getName(FD);
}

static StringRef kindName(FactKind K) {
  switch (K) {
  case FactKind::Releases:
    return "releases";
  case FactKind::Allocates:
    return "allocates";
  case FactKind::Returns:
    return "returns";
  case FactKind::Reads:
    return "reads";
  }
  return "";
}

bool FactTable::read(StringRef Path) {
  auto Buf = llvm::MemoryBuffer::getFile(Path);
  if (!Buf)
    return false;
  llvm::SmallVector<StringRef, 0> Lines;
  (*Buf)->getBuffer().split(Lines, '\n', -1, false);
  for (StringRef Line : Lines) {
    llvm::SmallVector<StringRef, 5> F;
    Line.split(F, '\t');
    if (F.size() != 5 || F[0] != "fact")
      continue;
    int Param = 0;
    if (F[3].getAsInteger(10, Param))
      continue;
    FactKind K;
    if (F[2] == "releases")
      K = FactKind::Releases;
    else if (F[2] == "allocates")
      K = FactKind::Allocates;
    else if (F[2] == "returns")
      K = FactKind::Returns;
    else if (F[2] == "reads")
      K = FactKind::Reads;
    else
      continue;
    if ((K == FactKind::Releases && !findReleaseNamed(F[4])) ||
        (K == FactKind::Allocates && !findAllocationNamed(F[4])))
      continue;
    ByName[F[1]].push_back({K, Param, F[4].str()});
  }
  return true;
}

const Facts *FactTable::find(StringRef Name) const {
  auto It = ByName.find(Name);
  return It == ByName.end() ? nullptr : &It->second;
}

namespace {

void collectFunctions(const DeclContext *DC,
                      llvm::SmallVectorImpl<const FunctionDecl *> &Out) {
  for (const Decl *D : DC->decls()) {
    if (const auto *FD = dyn_cast<FunctionDecl>(D))
      Out.push_back(FD);
    else if (const auto *Inner = dyn_cast<DeclContext>(D))
      if (isa<NamespaceDecl, LinkageSpecDecl, ExternCContextDecl>(D))
        collectFunctions(Inner, Out);
  }
}

void collectCalls(const Stmt *S, llvm::SmallPtrSetImpl<const FunctionDecl *> &Out) {
  if (!S)
    return;
  if (const auto *CE = dyn_cast<CallExpr>(S))
    if (const FunctionDecl *Callee = CE->getDirectCallee())
      Out.insert(Callee);
  for (const Stmt *Child : S->children())
    collectCalls(Child, Out);
}

} // namespace

void writeFacts(const TranslationUnitDecl *TU, StringRef Path) {
  std::error_code EC;
  llvm::raw_fd_ostream OS(Path, EC);
  if (EC)
    return;
  const ASTContext &Ctx = TU->getASTContext();
  const SourceManager &SM = Ctx.getSourceManager();
  ASTNameGenerator Names(const_cast<ASTContext &>(Ctx));
  llvm::SmallVector<const FunctionDecl *, 64> Functions;
  collectFunctions(TU, Functions);
  llvm::SmallPtrSet<const FunctionDecl *, 32> Called;
  for (const FunctionDecl *FD : Functions) {
    if (!FD->doesThisDeclarationHaveABody() ||
        !SM.isInMainFile(FD->getLocation()))
      continue;
    collectCalls(FD->getBody(), Called);
    if (!FD->isExternallyVisible() || FD->isInlined() ||
        FD->isTemplateInstantiation() || FD->isMain() ||
        FD->hasAttr<CUDAGlobalAttr>())
      continue;
    std::string Name = Names.getName(FD);
    for (const Fact &F : learnFacts(FD))
      OS << "fact\t" << Name << '\t' << kindName(F.Kind) << '\t' << F.Param
         << '\t' << (F.Call.empty() ? "-" : F.Call) << '\n';
  }
  for (const FunctionDecl *FD : Called)
    if (!FD->hasBody() && !SM.isInSystemHeader(FD->getLocation()) &&
        !(FD->getIdentifier() && isCudaApiName(FD->getName())))
      OS << "calls\t" << Names.getName(FD) << '\n';
}

} // namespace gpumem
