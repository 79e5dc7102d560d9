//===- Rewrites.cpp - Function bodies as the analysis should read them ---===//
//
// Part of gpumem. An AST action that runs before the analysis and rewrites
// two constructs the engine handles badly, in function bodies only. Only the
// analysis sees the rewritten bodies: an --analyze compilation makes no code.
//
// do { ... } while (0), the body of most check macros, is a loop to the
// engine: inside a loop it unrolls, the engine counts the macro's visits per
// path and drops the path at the 4th (so nothing after an 8-step training
// loop whose body checks each call was analysed). Without a break or a
// continue of its own, it is its body, so the body replaces it.
//
// typeid: clang 22's engine does not model CXXTypeidExpr: it ends
// the path at the expression (a sink, before any checker is asked), so
// nothing after `if (typeid(Real) == typeid(double))` is analysed. No
// analyzer option or checker callback reaches that point, so the plugin also
// registers an AST action that runs before the analysis and rewrites, in
// function bodies only:
//   - `typeid(A) == typeid(B)` (and `!=`) whose operands are types or
//     expressions of non-polymorphic type, i.e. known at compile time, into
//     the boolean it is (the comparison is per template instantiation);
//   - any other typeid into a reference to an unknown `const std::type_info`
//     object of its own, which the engine reads as an unknown value.
//
//===----------------------------------------------------------------------===//

#include "clang/AST/ASTConsumer.h"
#include "clang/AST/ASTContext.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/FrontendPluginRegistry.h"

using namespace clang;

namespace {

/// The type a typeid names when it is known without running the program;
/// null when the operand is a glvalue of polymorphic class type.
QualType staticTypeOf(const CXXTypeidExpr *E, const ASTContext &Ctx) {
  if (E->isTypeOperand())
    return Ctx.getCanonicalType(E->getTypeOperand(Ctx)).getUnqualifiedType();
  if (E->isPotentiallyEvaluated())
    return QualType();
  QualType T = E->getExprOperand()->getType().getNonReferenceType();
  return Ctx.getCanonicalType(T).getUnqualifiedType();
}

const CXXTypeidExpr *asTypeid(const Expr *E) {
  return dyn_cast<CXXTypeidExpr>(E->IgnoreParenImpCasts());
}

/// True when a break or continue in \p S would leave the loop around it.
bool jumpsOut(const Stmt *S, bool InSwitch) {
  if (!S || isa<ForStmt, WhileStmt, DoStmt, CXXForRangeStmt, LambdaExpr>(S))
    return false;
  if (isa<ContinueStmt>(S) || (isa<BreakStmt>(S) && !InSwitch))
    return true;
  InSwitch = InSwitch || isa<SwitchStmt>(S);
  for (const Stmt *Child : S->children())
    if (jumpsOut(Child, InSwitch))
      return true;
  return false;
}

/// The body of a `do ... while (0)` that can stand for it, else nullptr.
Stmt *onceBody(Stmt *S, const ASTContext &Ctx) {
  auto *DS = dyn_cast<DoStmt>(S);
  if (!DS || DS->getCond()->isValueDependent())
    return nullptr;
  bool Value = true;
  if (!DS->getCond()->EvaluateAsBooleanCondition(Value, Ctx) || Value ||
      DS->getCond()->HasSideEffects(Ctx) || jumpsOut(DS->getBody(), false))
    return nullptr;
  return DS->getBody();
}

class BodyRewriter : public RecursiveASTVisitor<BodyRewriter> {
  ASTContext &Ctx;
  unsigned Count = 0;

  /// The comparison's value, or nullptr when it is not a comparison of two
  /// typeids known at compile time.
  Expr *folded(const Expr *E) {
    const auto *Op = dyn_cast<CXXOperatorCallExpr>(E->IgnoreParens());
    if (!Op || Op->getNumArgs() != 2 ||
        (Op->getOperator() != OO_EqualEqual &&
         Op->getOperator() != OO_ExclaimEqual))
      return nullptr;
    const CXXTypeidExpr *L = asTypeid(Op->getArg(0));
    const CXXTypeidExpr *R = asTypeid(Op->getArg(1));
    if (!L || !R)
      return nullptr;
    QualType LT = staticTypeOf(L, Ctx), RT = staticTypeOf(R, Ctx);
    if (LT.isNull() || RT.isNull())
      return nullptr;
    bool Same = Ctx.hasSameType(LT, RT);
    bool Value = Op->getOperator() == OO_EqualEqual ? Same : !Same;
    return CXXBoolLiteralExpr::Create(Ctx, Value, Op->getType(),
                                      Op->getBeginLoc());
  }

  /// A reference to a fresh, unknown `const std::type_info` object.
  Expr *opaque(const CXXTypeidExpr *E) {
    SourceLocation Loc = E->getBeginLoc();
    std::string Name = "__gpumem_typeid_" + std::to_string(Count++);
    auto *VD = VarDecl::Create(Ctx, Ctx.getTranslationUnitDecl(), Loc, Loc,
                               &Ctx.Idents.get(Name), E->getType(),
                               Ctx.getTrivialTypeSourceInfo(E->getType(), Loc),
                               SC_Extern);
    return DeclRefExpr::Create(Ctx, NestedNameSpecifierLoc(), SourceLocation(),
                               VD, false, Loc, E->getType(), VK_LValue);
  }

public:
  explicit BodyRewriter(ASTContext &Ctx) : Ctx(Ctx) {}
  bool shouldVisitTemplateInstantiations() const { return true; }

  bool VisitStmt(Stmt *S) {
    for (Stmt *&Child : S->children()) {
      // A do-while(0) inside a do-while(0): the inner one goes first.
      while (Stmt *Body = Child ? onceBody(Child, Ctx) : nullptr)
        Child = Body;
      const auto *E = dyn_cast_or_null<Expr>(Child);
      if (!E)
        continue;
      if (Expr *V = folded(E))
        Child = V;
      else if (const auto *T = dyn_cast<CXXTypeidExpr>(E))
        Child = opaque(T);
    }
    return true;
  }
};

class RewriteConsumer : public ASTConsumer {
public:
  void HandleTranslationUnit(ASTContext &Ctx) override {
    BodyRewriter(Ctx).TraverseDecl(Ctx.getTranslationUnitDecl());
  }
};

class RewriteAction : public PluginASTAction {
protected:
  std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance &,
                                                 StringRef) override {
    return std::make_unique<RewriteConsumer>();
  }
  bool ParseArgs(const CompilerInstance &,
                 const std::vector<std::string> &) override {
    return true;
  }
  // Before the analysis, which reads the bodies in its own
  // HandleTranslationUnit; loading the plugin is enough to run it.
  ActionType getActionType() override { return AddBeforeMainAction; }
};

} // namespace

static FrontendPluginRegistry::Add<RewriteAction>
    RegisterRewrites("gpumem-rewrites",
                     "function bodies as gpumem's analyzer checkers read them");
