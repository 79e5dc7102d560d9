// A minimal checker plugin for the end-to-end test of the front end with the real clang 22:
// it registers gpumem.NeverReleased, reports "memory from gm_alloc is never released" at each
// call of gm_leak(), and leaves an "allocated here with gm_alloc" note at each gm_alloc(), so
// the SARIF that clang writes has a path, a note and an issue hash. It also registers the
// options of gpumem.Memory that the front end passes to every unit (the facts files). The
// real checkers are in tools/lint/analyzer/.
#include "clang/StaticAnalyzer/Core/BugReporter/BugType.h"
#include "clang/StaticAnalyzer/Core/Checker.h"
#include "clang/StaticAnalyzer/Core/PathSensitive/CallEvent.h"
#include "clang/StaticAnalyzer/Core/PathSensitive/CheckerContext.h"
#include "clang/StaticAnalyzer/Frontend/CheckerRegistry.h"

using namespace clang;
using namespace ento;

namespace {
class NoChecker : public Checker<check::EndOfTranslationUnit> {
public:
  void checkEndOfTranslationUnit(const TranslationUnitDecl *, AnalysisManager &,
                                 BugReporter &) const {}
};

class TestChecker : public Checker<check::PostCall> {
  BugType BT{this, "never released", "gpumem"};

public:
  void checkPostCall(const CallEvent &Call, CheckerContext &C) const {
    const IdentifierInfo *II = Call.getCalleeIdentifier();
    if (!II)
      return;
    if (II->getName() == "gm_alloc") {
      C.addTransition(C.getState(), C.getNoteTag([](PathSensitiveBugReport &) {
        return std::string("allocated here with gm_alloc");
      }));
    } else if (II->getName() == "gm_leak") {
      if (ExplodedNode *N = C.generateNonFatalErrorNode())
        C.emitReport(std::make_unique<PathSensitiveBugReport>(
            BT, "memory from gm_alloc is never released", N));
    }
  }
};
} // namespace

extern "C" void clang_registerCheckers(CheckerRegistry &R) {
  R.addChecker<TestChecker>("gpumem.NeverReleased", "test checker", "");
  R.addChecker<NoChecker>("gpumem.Memory", "test modelling", "", /*IsHidden=*/true);
  for (const char *Opt : {"FactsOut", "FactsIn"})
    R.addCheckerOption("string", "gpumem.Memory", Opt, "", "facts file", "released");
}

extern "C" const char clang_analyzerAPIVersionString[] = CLANG_ANALYZER_API_VERSION_STRING;
