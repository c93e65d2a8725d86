"""The component machinery, below everything that registers or builds components: the kinds
(:mod:`.kinds`), component specs (:mod:`.component_spec`), the registry (:mod:`.registry`) and lazy
factories (:mod:`.lazy`). It imports only the data model and the runtime."""
