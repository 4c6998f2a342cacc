# tapdiff_use_toml(TARGET): toml++ for a target that parses TOML. The fuzz build compiles its parser
# in (header-only), so that libFuzzer sees its coverage; other builds link the library.
function(tapdiff_use_toml target)
  if(TAPDIFF_FUZZ)
    get_target_property(toml_includes tomlplusplus::tomlplusplus INTERFACE_INCLUDE_DIRECTORIES)
    target_include_directories(${target} SYSTEM PRIVATE ${toml_includes})
    target_compile_definitions(${target} PRIVATE TOML_HEADER_ONLY=1)
  else()
    target_link_libraries(${target} PRIVATE tomlplusplus::tomlplusplus)
  endif()
endfunction()
