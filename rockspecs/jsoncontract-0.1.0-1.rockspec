rockspec_format = "3.0"
package = "jsoncontract"
version = "0.1.0-1"
source = {
   url = "git+file://.",
   tag = "v0.1.0",
}
description = {
   summary = "Make a language model's structured output safe to hand to code",
   detailed = [[
A contract (JSON Schema + version + instructions + business rules in Lua) travels with the
request; the reply passes transport, protocol, format (strict RFC 8259), schema and rules
gates and becomes a checked Lua value or a named, listed reason why not.
]],
   license = "MIT",
   labels = { "json", "json-schema", "llm", "openresty" },
}
dependencies = {
   "lua >= 5.1",
}
external_dependencies = {
   CURL = { header = "curl/curl.h", library = "curl" },
   PCRE2 = { header = "pcre2.h", library = "pcre2-8" },
   CRYPTO = { header = "openssl/evp.h", library = "crypto" },
}
build = {
   type = "builtin",
   modules = {
      ["jsoncontract.core"] = {
         sources = { "csrc/core.c", "csrc/parse.c", "csrc/encode.c", "csrc/schema.c",
                     "csrc/pattern.c", "csrc/transport.c", "csrc/schema_format.c", "csrc/stream.c" },
         defines = { "JC_VERSION=\"0.1.0\"", "_POSIX_C_SOURCE=200809L" },
         libraries = { "curl", "pcre2-8", "crypto" },
         incdirs = { "$(CURL_INCDIR)", "$(PCRE2_INCDIR)", "$(CRYPTO_INCDIR)" },
         libdirs = { "$(CURL_LIBDIR)", "$(PCRE2_LIBDIR)", "$(CRYPTO_LIBDIR)" },
      },
      ["jsoncontract.adapters"] = "lua/jsoncontract/adapters.lua",
      ["jsoncontract.batch"] = "lua/jsoncontract/batch.lua",
      ["jsoncontract.cli"] = "lua/jsoncontract/cli.lua",
      ["jsoncontract.cli_lint"] = "lua/jsoncontract/cli_lint.lua",
      ["jsoncontract.contract"] = "lua/jsoncontract/contract.lua",
      ["jsoncontract.contract.rules"] = "lua/jsoncontract/contract/rules.lua",
      ["jsoncontract.diff"] = "lua/jsoncontract/diff.lua",
      ["jsoncontract.errors"] = "lua/jsoncontract/errors.lua",
      ["jsoncontract.evidence"] = "lua/jsoncontract/evidence.lua",
      ["jsoncontract"] = "lua/jsoncontract/init.lua",
      ["jsoncontract.lint"] = "lua/jsoncontract/lint.lua",
      ["jsoncontract.messages"] = "lua/jsoncontract/messages.lua",
      ["jsoncontract.providers.anthropic"] = "lua/jsoncontract/providers/anthropic.lua",
      ["jsoncontract.providers.gemini"] = "lua/jsoncontract/providers/gemini.lua",
      ["jsoncontract.providers"] = "lua/jsoncontract/providers/init.lua",
      ["jsoncontract.providers.llamacpp"] = "lua/jsoncontract/providers/llamacpp.lua",
      ["jsoncontract.providers.ndjson"] = "lua/jsoncontract/providers/ndjson.lua",
      ["jsoncontract.providers.ollama"] = "lua/jsoncontract/providers/ollama.lua",
      ["jsoncontract.providers.openai"] = "lua/jsoncontract/providers/openai.lua",
      ["jsoncontract.providers.openai_responses"] = "lua/jsoncontract/providers/openai_responses.lua",
      ["jsoncontract.providers.sse"] = "lua/jsoncontract/providers/sse.lua",
      ["jsoncontract.providers.streaming"] = "lua/jsoncontract/providers/streaming.lua",
      ["jsoncontract.run"] = "lua/jsoncontract/run.lua",
      ["jsoncontract.secrets"] = "lua/jsoncontract/secrets.lua",
      ["jsoncontract.standin.model"] = "lua/jsoncontract/standin/model.lua",
      ["jsoncontract.standin.server"] = "lua/jsoncontract/standin/server.lua",
      ["jsoncontract.transport.curl"] = "lua/jsoncontract/transport/curl.lua",
      ["jsoncontract.transport.openresty"] = "lua/jsoncontract/transport/openresty.lua",
   },
   install = {
      bin = { "bin/jsoncontract", "bin/jsoncontract-standin" },
   },
}
test = {
   type = "busted",
}
