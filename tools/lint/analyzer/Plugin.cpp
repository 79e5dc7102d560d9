//===- Plugin.cpp - Registers gpumem's checkers with the analyzer --------===//
//
// Part of gpumem. Loaded into clang with
//   -Xclang -load -Xclang gpumem-analyzer.so -Xclang -analyzer-checker=gpumem
//
//===----------------------------------------------------------------------===//

#include "AlignmentChecker.h"
#include "MemoryChecker.h"
#include "StatusChecker.h"
#include "clang/StaticAnalyzer/Core/AnalyzerOptions.h"
#include "clang/StaticAnalyzer/Core/CheckerManager.h"
#include "clang/StaticAnalyzer/Frontend/CheckerRegistry.h"
#include <string_view>

using namespace clang;
using namespace clang::ento;
using namespace gpumem;

namespace {

constexpr const char *Docs = "https://github.com/gpumem/gpumem/docs/lint-rules.md";

void readNames(llvm::StringSet<> &Out, StringRef List) {
  llvm::SmallVector<StringRef, 8> Names;
  List.split(Names, ',', -1, false);
  for (StringRef N : Names)
    Out.insert(N.trim());
}

void registerMemory(CheckerManager &Mgr) {
  auto *Chk = Mgr.getChecker<MemoryChecker>();
  Chk->Modelling.enable(Mgr);
  const AnalyzerOptions &Opts = Mgr.getAnalyzerOptions();
  readNames(Chk->ReleaseFunctions,
            Opts.getCheckerStringOption("gpumem.Memory", "ReleaseFunctions"));
  readNames(Chk->OwnerFunctions,
            Opts.getCheckerStringOption("gpumem.Memory", "OwnerFunctions"));
  readNames(Chk->NoReturnFunctions,
            Opts.getCheckerStringOption("gpumem.Memory", "NoReturnFunctions"));
  StringRef In = Opts.getCheckerStringOption("gpumem.Memory", "FactsIn");
  if (!In.empty())
    Chk->ImportedFacts.read(In);
  Chk->FactsOut =
      Opts.getCheckerStringOption("gpumem.Memory", "FactsOut").str();
}

bool always(const CheckerManager &) { return true; }

// The rules of gpumem.Memory's family: registerNeverReleased, ...
#define GPUMEM_RULE_MEMORY(Checker)                                            \
  void register##Checker(CheckerManager &Mgr) {                                \
    Mgr.getChecker<MemoryChecker>()->Checker.enable(Mgr);                      \
  }
#define GPUMEM_RULE_OWN(Checker)
#define GPUMEM_RULE(Id, Checker, Family, Name, Desc, Brief, Help)             \
  GPUMEM_RULE_##Family(Checker)
#include "rules.def"
#undef GPUMEM_RULE

void registerUncheckedStatus(CheckerManager &Mgr) {
  auto *Chk = Mgr.registerChecker<StatusChecker>();
  readNames(Chk->LaunchChecks,
            Mgr.getAnalyzerOptions().getCheckerStringOption(
                "gpumem.UncheckedStatus", "LaunchChecks"));
}

void registerVectorAlignment(CheckerManager &Mgr) {
  auto *Chk = Mgr.registerChecker<AlignmentChecker>();
  Chk->Pedantic = Mgr.getAnalyzerOptions().getCheckerBooleanOption(
      "gpumem.VectorAlignment", "Pedantic");
}

} // namespace

#define GPUMEM_PLUGIN_EXPORT __attribute__((visibility("default")))

extern "C" GPUMEM_PLUGIN_EXPORT const char clang_analyzerAPIVersionString[] =
    CLANG_ANALYZER_API_VERSION_STRING;

extern "C" GPUMEM_PLUGIN_EXPORT void clang_registerCheckers(CheckerRegistry &Registry) {
  Registry.addChecker(registerMemory, always, "gpumem.Memory",
                      "Models CUDA, gpumem and C/C++ allocations", Docs,
                      /*IsHidden=*/true);
  Registry.addCheckerOption("string", "gpumem.Memory", "ReleaseFunctions", "",
                            "Comma-separated functions that release the "
                            "memory their first argument points to",
                            "released");
  Registry.addCheckerOption("string", "gpumem.Memory", "OwnerFunctions",
                            "gpumem_adopt_at",
                            "Comma-separated functions that take ownership "
                            "of the pointers passed to them",
                            "released");

  Registry.addCheckerOption("string", "gpumem.Memory", "NoReturnFunctions",
                            "error,fatal,fatal_error,die,panic",
                            "Comma-separated error handlers (functions or the "
                            "macros calls are written with) that do not "
                            "return, for handlers defined in another file",
                            "released");

  Registry.addCheckerOption("string", "gpumem.Memory", "FactsOut", "",
                            "Where to write the facts of the functions this "
                            "unit defines (what each does with the pointers "
                            "it is given) and the functions it calls without "
                            "a body here",
                            "released");
  Registry.addCheckerOption("string", "gpumem.Memory", "FactsIn", "",
                            "Facts of functions defined in other units, as "
                            "FactsOut writes them (merged), applied at calls "
                            "of those functions",
                            "released");

  struct Rule {
    void (*Register)(CheckerManager &);
    const char *Name;
    const char *Desc;
    bool OfMemory;
  };
  const Rule Rules[] = {
#define GPUMEM_RULE(Id, Checker, Family, Name, Desc, Brief, Help)             \
  {register##Checker, "gpumem." #Checker, #Id ": " Desc,                       \
   std::string_view(#Family) == "MEMORY"},
#include "rules.def"
#undef GPUMEM_RULE
  };
  for (const Rule &R : Rules) {
    Registry.addChecker(R.Register, always, R.Name, R.Desc, Docs);
    if (R.OfMemory)
      Registry.addDependency(R.Name, "gpumem.Memory");
  }

  Registry.addCheckerOption("bool", "gpumem.VectorAlignment", "Pedantic",
                            "false",
                            "Also report vector views whose alignment the "
                            "analyzer cannot prove",
                            "released");
  Registry.addCheckerOption("string", "gpumem.UncheckedStatus", "LaunchChecks",
                            "gpumem__check_launch,gpumem_sync_launch",
                            "Comma-separated calls that check a kernel "
                            "launch, besides cudaGetLastError and "
                            "cudaPeekAtLastError",
                            "released");
}
