// expect: HardcodedOnly
public class SumCalculator {
    public static void main(String[] args) {
        int sum = 5050;
        System.out.println("Sum = " + sum);
    }
}
