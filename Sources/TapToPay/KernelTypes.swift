// The module EMVKernel declares a type of the same name, so its types cannot be qualified
// with the module name where PaymentGateway's namesakes are also visible; these aliases can.
import EMVKernel

typealias KernelCardData = CardData
typealias KernelCardBrand = CardBrand
