// TapToPay: see DESIGN.md.
