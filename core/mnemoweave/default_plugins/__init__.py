"""The built-in plugins: mnemoweave's own embedders, classifier, distiller and weave tiers,
registered through the same hooks a third-party plugin implements (`plugins.BUILTIN_PLUGINS`
lists them). Each module here only connects a hook to the core code that does the work."""
