// PaymentGateway: see DESIGN.md.
