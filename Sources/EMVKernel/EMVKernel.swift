// EMVKernel: see DESIGN.md.
